// The page's shared state: the connection, the streams on the page, and the one way to
// send a frame to the relay. Every other module reads and writes it through here.

export const RECONNECT_MIN_MS = 250;
export const RECONNECT_MAX_MS = 5000;
export const STREAM_ID = /^[A-Za-z0-9_-]{1,64}$/;
export const MAX_SPANS = 1024; // the core's cap (core/dialects/base.py MAX_SPANS): more is hostile

export const state = {
  ws: null,
  connected: false,
  hello: null,
  backoff: RECONNECT_MIN_MS,
  lastMessageAt: 0,
  streams: new Map(), // stream_id -> stream
  pending: new Map(), // ref -> turn waiting for "accepted"
  current: null, // stream the Stop button cancels
  nextRef: 1,
  closedByPage: false,
};

export const $ = (sel, root = document) => root.querySelector(sel);

export function send(obj) {
  if (!state.ws || state.ws.readyState !== WebSocket.OPEN) return false;
  state.ws.send(JSON.stringify(obj));
  return true;
}
