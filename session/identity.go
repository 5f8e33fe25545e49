package session

// Credential is the uid and gid the session's commands run as when it is
// isolated (ok false otherwise: they run as the daemon). Other packages
// that act for the session (the file methods) take the same identity.
func (s *Session) Credential() (uid, gid uint32, ok bool) {
	if s.lease == nil {
		return 0, 0, false
	}
	return s.lease.uid, s.lease.uid, true
}
