// trl console: the session list, a live terminal view, a transcript, and
// replays of recordings. No framework, no inline script (the page's CSP
// allows scripts from this origin only).
"use strict";

const $ = (id) => document.getElementById(id);
let listTimer = null;
let viewer = null; // {term, ws, fit}

function text(el, s) { el.textContent = s; return el; }
function el(tag, cls, s) { const e = document.createElement(tag); if (cls) e.className = cls; if (s !== undefined) e.textContent = s; return e; }

function age(iso) {
  const s = Math.max(0, (Date.now() - Date.parse(iso)) / 1000);
  if (s < 60) return Math.round(s) + " s";
  if (s < 3600) return Math.round(s / 60) + " min";
  return (s / 3600).toFixed(1) + " h";
}

function size(n) {
  if (n < 1024) return n + " B";
  if (n < 1024 * 1024) return (n / 1024).toFixed(1) + " KiB";
  return (n / 1024 / 1024).toFixed(1) + " MiB";
}

function show(view) {
  for (const v of ["list-view", "session-view", "recordings-view"]) $(v).hidden = v !== view;
}

async function api(path) {
  const r = await fetch(path, { credentials: "same-origin" });
  if (!r.ok) throw new Error((await r.json().catch(() => ({}))).error || r.statusText);
  return r.json();
}

async function refreshList() {
  let data;
  try { data = await api("api/sessions"); } catch (e) { text($("empty"), "Cannot list sessions: " + e.message).hidden = false; return; }
  text($("mode"), data.write ? "you may type into sessions" : "read-only");
  const running = {};
  for (const c of (data.commands && data.commands.commands) || []) if (c.state !== "exited") running[c.session_id] = c;
  showWaiting(data);
  showApprovals(data);
  const body = $("sessions").tBodies[0];
  body.replaceChildren();
  const sessions = (data.sessions && data.sessions.sessions) || [];
  $("empty").hidden = sessions.length > 0;
  const names = {};
  for (const s of sessions) names[s.session_id] = s.name || s.session_id;
  for (const s of sessions) {
    const tr = el("tr", "row");
    tr.dataset.session = s.session_id;
    const c = running[s.session_id];
    const nameCell = el("td", "", s.name || s.session_id);
    if (s.parent) nameCell.append(el("span", "parent", " forked from " + (names[s.parent] || s.parent)));
    tr.append(nameCell, el("td", "state-" + s.state, s.state),
      el("td", "", c ? c.command : ""), el("td", c && c.input ? "waiting" : "", c && c.input ? c.input.kind + (c.input.prompt ? ": " + c.input.prompt : "") : ""),
      el("td", "", s.working_dir), el("td", "", age(s.created_at)));
    tr.addEventListener("click", () => { location.hash = "session/" + encodeURIComponent(s.session_id); });
    body.append(tr);
  }
}

// newTerminal is an xterm.js terminal that draws as the session's screen
// model does. The server sends carriage returns with line feeds already
// (the terminal's ONLCR is off; see console/onlcr.go), so convertEol
// stays off. Widths are Unicode 11's, as glibc's wcwidth (which the
// screen model follows) gives them: an emoji takes two columns.
//
// lineHeight 1.2: at 1.0 a row is exactly the font's height and the DOM
// renderer clips each row, so "__name__" lost its underscores (drawn just
// below the baseline box) and descenders were cut.
function newTerminal(opts) {
  const term = new Terminal(Object.assign({
    convertEol: false, fontSize: 14, lineHeight: 1.2, allowProposedApi: true,
    fontFamily: 'ui-monospace, "DejaVu Sans Mono", "Liberation Mono", monospace',
  }, opts));
  term.loadAddon(new Unicode11Addon.Unicode11Addon());
  term.unicode.activeVersion = "11";
  muteReports(term);
  return term;
}

// setTitle names the session view, and the browser's tab, by the
// session's name, or its id when it has none.
function setTitle(id, name) {
  const h = $("session-title");
  h.replaceChildren(el("span", "", "Session " + (name || id)));
  if (name) h.append(el("span", "session-id", id));
  document.title = (name || id) + " · trl console";
}

// waitingWords says what a waiting command wants, as a person reads it.
const waitingWords = { line: "a line", password: "a password", raw: "keys", tui: "keys (full-screen program)" };

// showWaiting lists, at the top of the sessions page, the commands that
// wait for input, with their prompt: where an agent is stuck. It is
// refreshed with the session list (every second).
//
// Pending approvals have their own box beside it (showApprovals).
function showWaiting(data) {
  const names = {};
  for (const s of (data.sessions && data.sessions.sessions) || []) names[s.session_id] = s.name || s.session_id;
  const ul = $("waiting");
  ul.replaceChildren();
  const waiting = ((data.commands && data.commands.commands) || []).filter((c) => c.state === "waiting_input" && c.input);
  $("waiting-none").hidden = waiting.length > 0;
  $("waiting-box").className = waiting.length ? "stuck" : "";
  for (const c of waiting) {
    const li = el("li", "waiting-cmd");
    li.dataset.exec = c.exec_id;
    const a = el("a", "", names[c.session_id] || c.session_id);
    a.href = "#session/" + encodeURIComponent(c.session_id);
    li.append(a, el("span", "wants", " wants " + (waitingWords[c.input.kind] || c.input.kind) + " "),
      el("code", "prompt", c.input.prompt || "(no prompt)"),
      el("span", "waiting-meta", "$ " + c.command + " · running " + age(c.started_at)));
    ul.append(li);
  }
}

// showApprovals lists the commands the daemon's policy holds until a
// person decides (state awaiting_approval), with the rule's reason, and,
// for a person allowed to approve, Approve and Deny with a reason. The box
// stays hidden while nothing waits. A decision in progress (a reason being
// typed) is not redrawn under the person's hands.
function showApprovals(data) {
  const pending = ((data.commands && data.commands.commands) || []).filter((c) => c.state === "awaiting_approval" && c.approval);
  const box = $("approvals-box");
  box.hidden = pending.length === 0;
  box.className = pending.length ? "stuck" : "";
  const ul = $("approvals");
  if (ul.contains(document.activeElement)) return;
  ul.replaceChildren();
  const names = {};
  for (const s of (data.sessions && data.sessions.sessions) || []) names[s.session_id] = s.name || s.session_id;
  for (const c of pending) {
    const a = c.approval;
    const li = el("li", "approval" + (a.dangerous ? " dangerous" : ""));
    li.dataset.approval = a.approval_id;
    const link = el("a", "", names[c.session_id] || c.session_id);
    link.href = "#session/" + encodeURIComponent(c.session_id);
    li.append(link, el("code", "approval-command", "$ " + c.command),
      el("span", "approval-reason", (a.dangerous ? "dangerous · " : "") + a.reason + " (" + a.rule + ")"),
      el("span", "waiting-meta", "waiting " + age(c.started_at)));
    if (data.approve) {
      const reason = el("input", "approval-why");
      reason.placeholder = "reason (optional)";
      const yes = el("button", "approve", "Approve");
      const no = el("button", "deny", "Deny");
      const decide = (decision) => async () => {
        yes.disabled = no.disabled = true;
        try {
          const r = await fetch("api/approve", { method: "POST", credentials: "same-origin", headers: { "Content-Type": "application/json" },
            body: JSON.stringify({ approval_id: a.approval_id, decision, reason: reason.value }) });
          if (!r.ok) throw new Error((await r.json().catch(() => ({}))).error || r.statusText);
          li.replaceChildren(el("span", "decided", (decision === "approve" ? "approved: " : "denied: ") + c.command));
        } catch (e) {
          yes.disabled = no.disabled = false;
          li.append(el("span", "error", e.message));
        }
      };
      yes.addEventListener("click", decide("approve"));
      no.addEventListener("click", decide("deny"));
      li.append(reason, yes, no);
    } else {
      li.append(el("span", "quiet", "a person with an approver's login decides"));
    }
    ul.append(li);
  }
}

// muteReports stops xterm.js from answering a program's terminal queries
// (device attributes, cursor position, mode and setting reports, colour
// queries). The session's own screen model answers them on the server;
// answers from the page would reach the program a second time as typed
// input (with --console-write) or be refused as input (read-only). The
// queries change nothing on the screen, so swallowing them loses
// nothing.
function muteReports(term) {
  const p = term.parser;
  for (const id of [{ final: "c" }, { prefix: ">", final: "c" }, { prefix: "=", final: "c" },
    { final: "n" }, { prefix: "?", final: "n" },
    { intermediates: "$", final: "p" }, { prefix: "?", intermediates: "$", final: "p" },
    { prefix: ">", final: "q" }]) {
    p.registerCsiHandler(id, () => true);
  }
  p.registerDcsHandler({ intermediates: "$", final: "q" }, () => true);
  p.registerDcsHandler({ intermediates: "+", final: "q" }, () => true);
  for (const osc of [4, 10, 11, 12, 52]) {
    p.registerOscHandler(osc, (data) => data.includes("?"));
  }
}

function closeViewer() {
  if (!viewer) return;
  try { viewer.ws.close(); } catch (_) {}
  viewer.term.dispose();
  viewer = null;
}

function openSession(id) {
  show("session-view");
  setTitle(id, "");
  $("live").hidden = false; $("transcript").hidden = true;
  $("live-commands").replaceChildren();
  $("tab-live").className = "on"; $("tab-transcript").className = "";
  closeViewer();
  const term = newTerminal({ scrollback: 5000 });
  const fit = new FitAddon.FitAddon();
  term.loadAddon(fit);
  term.open($("terminal"));
  const proto = location.protocol === "https:" ? "wss:" : "ws:";
  const ws = new WebSocket(proto + "//" + location.host + "/console/ws?session=" + encodeURIComponent(id));
  ws.binaryType = "arraybuffer";
  const v = { term, ws, fit, ended: false };
  viewer = v;
  ws.onmessage = (ev) => {
    if (viewer !== v) return; // a session left since
    if (typeof ev.data === "string") {
      const m = JSON.parse(ev.data);
      if (m.type === "hello") {
        setTitle(m.session_id, m.name);
        term.resize(m.cols, m.rows);
        text($("hint"), m.write ? "Typing here goes to the session." : "Read-only: start the daemon with --console-write to type.");
      } else if (m.type === "resize") {
        term.resize(m.cols, m.rows); // a repaint follows
      } else if (m.type === "error") {
        text($("hint"), m.message);
      } else if (m.type === "ended") {
        v.ended = true;
        text($("hint"), m.message + ".");
      } else if (m.type === "command-start" || m.type === "command-end") {
        // xterm.js parses writes later: mark once the bytes before the
        // boundary are on the screen.
        term.write("", () => markCommand(term, m));
      }
      return;
    }
    term.write(new Uint8Array(ev.data));
  };
  ws.onclose = () => { if (viewer === v && !v.ended) text($("hint"), "Disconnected."); };
  term.onData((d) => {
    // Focus reports (mode 1004, which vim turns on) say where this
    // page's focus is, not what a person typed: the agent's program
    // must not see a person's clicks.
    if (d === "\x1b[I" || d === "\x1b[O") return;
    if (ws.readyState === 1) ws.send(JSON.stringify({ type: "input", data: d }));
  });
}

// when is a start time as a person reads it: the time of day, with the
// date when it is not today.
function when(iso) {
  const d = new Date(iso);
  if (isNaN(d)) return iso || "";
  const t = d.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", second: "2-digit" });
  return d.toDateString() === new Date().toDateString() ? t : d.toLocaleDateString() + " " + t;
}

// markCommand marks a command boundary, which the server sends in order
// with the terminal's bytes. Nothing is written into the terminal: what
// xterm.js holds stays, row for row, what session.screen holds. The start
// is an xterm.js decoration (an element drawn over the row where the
// command's output begins, a dim line along its top edge), and the side
// list gets the command line, then its exit and duration.
function markCommand(term, m) {
  const list = $("live-commands");
  if (m.type === "command-start") {
    const li = el("li", "live-cmd running");
    li.append(el("code", "", "$ " + m.command), el("span", "live-exit", "running"));
    const marker = term.registerMarker(0);
    const deco = marker && term.registerDecoration({ marker, width: term.cols, layer: "top" });
    if (deco) deco.onRender((e) => { e.classList.add("cmd-mark"); e.title = "$ " + m.command; });
    li.marker = marker;
    li.addEventListener("click", () => { if (marker && !marker.isDisposed) term.scrollToLine(marker.line); });
    list.append(li);
    term.trlCurrent = { li, deco };
    while (list.children.length > 200) list.firstChild.remove();
    return;
  }
  const cur = term.trlCurrent;
  term.trlCurrent = null;
  if (!cur) return; // the start came before this view opened
  const ok = m.exit_code === 0;
  cur.li.className = "live-cmd " + (ok ? "exit-ok" : "exit-bad");
  text(cur.li.querySelector(".live-exit"), "exit " + m.exit_code + (m.duration ? " · " + m.duration : ""));
  if (cur.deco) {
    const mark = (e) => e.classList.add(ok ? "cmd-ok" : "cmd-bad");
    if (cur.deco.element) mark(cur.deco.element);
    cur.deco.onRender(mark);
  }
  const end = term.registerMarker(0);
  if (end) {
    const d = term.registerDecoration({ marker: end, width: term.cols, layer: "top" });
    if (d) d.onRender((e) => e.classList.add("cmd-end"));
  }
}

async function openTranscript(id) {
  $("live").hidden = true; $("transcript").hidden = false;
  $("tab-live").className = ""; $("tab-transcript").className = "on";
  const box = $("transcript");
  box.replaceChildren();
  let data;
  try { data = await api("api/commands?session=" + encodeURIComponent(id)); } catch (e) { box.append(el("p", "", e.message)); return; }
  if (!data.commands.length) box.append(el("p", "", "No commands yet."));
  for (const c of data.commands) {
    const d = el("div", "cmd");
    d.dataset.exec = c.exec_id;
    const head = el("div", "cmd-head");
    head.append(el("code", "cmdline", "$ " + c.command));
    const meta = el("span", "meta");
    const exit = c.exit_code === null ? c.state.replace("_", " ") : "exit " + c.exit_code;
    meta.append(el("span", "exit " + (c.exit_code === 0 ? "exit-ok" : c.exit_code === null ? "exit-running" : "exit-bad"), exit),
      el("span", "duration", c.duration), el("span", "cwd", c.cwd ? "cwd " + c.cwd : ""),
      el("span", "started", "started " + when(c.started_at)));
    head.append(meta);
    d.append(head);
    if (c.stdout) d.append(el("pre", "stdout", c.stdout + (c.stdout_cut ? "\n[… " + c.stdout_bytes + " bytes in all]" : "")));
    if (c.stderr) d.append(el("pre", "stderr", c.stderr + (c.stderr_cut ? "\n[… " + c.stderr_bytes + " bytes in all]" : "")));
    if (!c.stdout && !c.stderr) d.append(el("p", "no-output", c.output_error || "no output"));
    box.append(d);
  }
}

async function openRecordings() {
  show("recordings-view");
  closeViewer();
  const ul = $("recordings");
  ul.replaceChildren();
  const data = await api("api/recordings");
  if (!data.recordings.length) ul.append(el("li", "", "No recordings (start the daemon with --record DIR)."));
  for (const r of data.recordings) {
    const li = el("li", "recording");
    const a = el("a", "", r.session_name || r.session_id);
    a.href = "#recordings/" + encodeURIComponent(r.name);
    li.append(a, el("span", "rec-meta", "started " + when(r.started || r.modified) + " · " + size(r.bytes)));
    if (r.session_name) li.append(el("span", "session-id", r.session_id));
    ul.append(li);
  }
}

// player is the replay shown: {term, done}. done is set once the last
// event is drawn.
let player = null;

function stopPlayer() {
  if (!player) return;
  player.term.dispose();
  player = null;
}

// play replays a recording: output events ("o") as they came, a pause
// longer than 2 s cut to 2 s, resizes ("r", COLSxROWS) applied; markers
// ("m") are the command boundaries and draw nothing.
async function play(name) {
  await openRecordings();
  stopPlayer();
  const box = $("player");
  box.replaceChildren();
  const r = await fetch("api/recordings/" + encodeURIComponent(name), { credentials: "same-origin" });
  const lines = (await r.text()).split("\n").filter(Boolean);
  const hdr = JSON.parse(lines[0]);
  const term = newTerminal({ cols: hdr.width, rows: hdr.height });
  term.open(box);
  const me = { term, done: false };
  player = me;
  const t0 = performance.now();
  let skipped = 0; // seconds of idle time cut
  for (const line of lines.slice(1)) {
    if (player !== me) return; // another view was opened
    let ev;
    try { ev = JSON.parse(line); } catch (_) { continue; } // a line being written
    const [t, code, data] = ev;
    let wait = (t - skipped) * 1000 - (performance.now() - t0);
    if (wait > 2000) { skipped += (wait - 2000) / 1000; wait = 2000; }
    if (wait > 0) await new Promise((res) => setTimeout(res, wait));
    if (code === "o") {
      await new Promise((res) => term.write(data, res));
    } else if (code === "r") {
      const [cols, rows] = String(data).split("x").map(Number);
      if (cols > 0 && rows > 0) term.resize(cols, rows);
    }
  }
  me.done = true;
}

function route() {
  clearInterval(listTimer);
  const h = decodeURIComponent(location.hash.slice(1));
  if (!h.startsWith("recordings/")) stopPlayer();
  if (h.startsWith("session/")) { openSession(h.slice(8)); return; }
  if (h.startsWith("recordings/")) { play(h.slice(11)); return; }
  if (h === "recordings") { openRecordings(); return; }
  closeViewer();
  document.title = "trl console";
  show("list-view");
  refreshList();
  listTimer = setInterval(refreshList, 1000);
}

$("tab-live").addEventListener("click", () => openSession(decodeURIComponent(location.hash.slice(9))));
$("tab-transcript").addEventListener("click", () => openTranscript(decodeURIComponent(location.hash.slice(9))));
window.addEventListener("hashchange", route);
route();
