// The protocol: one WebSocket to the relay, reconnected with backoff, every open stream
// resumed after its last event; the relay's control frames (hello, accepted, heartbeat,
// error). Stream events go to events.js.

import { onStreamEvent } from "./events.js";
import { $, RECONNECT_MAX_MS, RECONNECT_MIN_MS, STREAM_ID, send, state } from "./state.js";
import {
  addStreamError,
  addTurnError,
  hideBanner,
  newStream,
  setConn,
  setStatus,
  setTurnStatus,
  showBanner,
  updateStop,
} from "./turns.js";

function wsUrl() {
  const url = new URL("/ws", location.href);
  url.protocol = location.protocol === "https:" ? "wss:" : "ws:";
  const token = new URLSearchParams(location.search).get("token");
  if (token) url.searchParams.set("token", token);
  return url.href;
}

export function connect() {
  state.closedByPage = false;
  setConn("connecting", "connecting…");
  let ws;
  try {
    ws = new WebSocket(wsUrl());
  } catch (err) {
    scheduleReconnect();
    return;
  }
  state.ws = ws;
  ws.onopen = () => {
    state.connected = true;
    state.lastMessageAt = Date.now();
    setConn("open", "connected");
    resumeAll();
  };
  ws.onmessage = (ev) => {
    state.lastMessageAt = Date.now();
    let msg;
    try {
      msg = JSON.parse(ev.data);
    } catch {
      showBanner("The relay sent a message that is not JSON.");
      return;
    }
    if (msg === null || typeof msg !== "object") return;
    if (typeof msg.seq === "number") onStreamEvent(msg);
    else onControl(msg);
  };
  const opened = () => state.connected;
  ws.onclose = (ev) => {
    if (state.ws !== ws) return;
    const wasOpen = opened();
    state.ws = null;
    state.connected = false;
    failPending("the connection dropped before the relay accepted the question; ask again");
    if (ev.code === 4008) showBanner("The connection fell behind; resuming where it stopped.", "info");
    if (wasOpen) scheduleReconnect(ev.code);
    else checkToken().then((needed) => (needed ? tokenRequired() : scheduleReconnect(ev.code)));
  };
  ws.onerror = () => {
    /* onclose follows */
  };
}

// A refused WebSocket handshake is invisible to the page (close code 1006): ask a plain
// endpoint that checks the same token whether the relay wants one we did not give.
async function checkToken() {
  try {
    const url = new URL("/metrics", location.href);
    const token = new URLSearchParams(location.search).get("token");
    if (token) url.searchParams.set("token", token);
    const res = await fetch(url, { cache: "no-store" });
    return res.status === 401;
  } catch {
    return false;
  }
}

function tokenRequired() {
  const given = new URLSearchParams(location.search).has("token");
  setConn(
    "unauthorized",
    given
      ? "this relay refused the token: open the page with the right one, /?token=YOUR_TOKEN"
      : "this relay requires a token: open the page as /?token=YOUR_TOKEN (the relay's --token)",
  );
}

function scheduleReconnect(code) {
  const delay = Math.min(state.backoff, RECONNECT_MAX_MS) * (0.75 + Math.random() * 0.5);
  state.backoff = Math.min(state.backoff * 2, RECONNECT_MAX_MS);
  const why = code === 1001 ? "relay restarting" : "connection lost";
  setConn("reconnecting", `${why} — reconnecting…`);
  setTimeout(connect, delay);
}

function resumeAll() {
  for (const s of state.streams.values()) {
    if (!s.done && !s.lost) send({ type: "resume", stream_id: s.id, after_seq: s.lastSeq });
  }
}

// A silent connection (no event, no heartbeat) is a dead one: reconnect.
setInterval(() => {
  if (!state.connected || !state.hello) return;
  const limit = Math.max(5, state.hello.heartbeat_interval * 2.5) * 1000;
  if (Date.now() - state.lastMessageAt > limit && state.ws) state.ws.close(4000, "silent");
}, 1000);

// -- control frames -----------------------------------------------------------------

function onControl(msg) {
  switch (msg.type) {
    case "hello":
      state.hello = msg;
      state.backoff = RECONNECT_MIN_MS;
      if (msg.limits && Number.isInteger(msg.limits.max_question_chars)) {
        $("#question").maxLength = msg.limits.max_question_chars;
      }
      hideBanner();
      break;
    case "accepted": {
      if (!STREAM_ID.test(String(msg.stream_id))) return;
      if (msg.resumed) return; // the stream is already on the page
      const turn = state.pending.get(msg.ref);
      if (!turn) return;
      state.pending.delete(msg.ref);
      const s = newStream(msg.stream_id, turn);
      state.current = s;
      setStatus(s, "streaming", "streaming…");
      updateStop();
      break;
    }
    case "heartbeat":
      break;
    case "error": {
      const s = typeof msg.stream_id === "string" ? state.streams.get(msg.stream_id) : null;
      if (s) {
        if (msg.code === "resume_gap") s.allowGap = true;
        if (msg.code === "unknown_stream" || msg.code === "stream_expired") {
          s.lost = true;
          setStatus(s, "error", "lost");
          updateStop();
        }
        addStreamError(s, msg);
      } else if (msg.ref && state.pending.has(msg.ref)) {
        const turn = state.pending.get(msg.ref);
        state.pending.delete(msg.ref);
        addTurnError(turn, msg);
        setTurnStatus(turn, "error", "not started");
      } else {
        showBanner(`${msg.code}: ${msg.message}`);
      }
      break;
    }
    default:
      break; // unknown control frames are ignored (forward compatibility)
  }
}

function failPending(message) {
  for (const turn of state.pending.values()) {
    addTurnError(turn, { code: "connection_lost", message });
    setTurnStatus(turn, "error", "not started");
  }
  state.pending.clear();
}
