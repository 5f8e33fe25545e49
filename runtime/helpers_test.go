package runtime

import "github.com/trl-project/trl/session"

func sessionOpts(max int) session.Options { return session.Options{MaxSessions: max} }
