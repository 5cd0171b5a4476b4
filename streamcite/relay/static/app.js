// streamcite relay page: one WebSocket, many streams, exactly-once rendering.
//
// Everything that comes from the network is rendered as text (textContent,
// createElement, setAttribute with plain strings) — never innerHTML — and only
// http:/https: URLs become links. The relay's Content-Security-Policy is a second
// wall, not the first.

import { el } from "./dom.js";
import {
  newParts,
  onReasoning,
  onRefusal,
  onToolCall,
  partsView,
  settleReasoning,
  settleToolCalls,
  showSkipped,
} from "./kinds.js";
import { setLang, statedLanguage } from "./lang.js";

const RECONNECT_MIN_MS = 250;
const RECONNECT_MAX_MS = 5000;
const STREAM_ID = /^[A-Za-z0-9_-]{1,64}$/;
const MAX_SPANS = 1024; // the core's cap (core/dialects/base.py MAX_SPANS): more is hostile
const MARKER = /^\[(\d{1,4}(?:, *\d{1,4})*)\]/;

const state = {
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

const $ = (sel, root = document) => root.querySelector(sel);

/** The URL as a link target when it is http(s), else null (javascript:, data:, ...). */
export function safeHref(url) {
  if (typeof url !== "string" || url.length > 4096) return null;
  try {
    const parsed = new URL(url);
    return parsed.protocol === "http:" || parsed.protocol === "https:" ? parsed.href : null;
  } catch {
    return null;
  }
}

function linkOrText(url, label, className) {
  const href = safeHref(url);
  if (href) {
    const a = el("a", className, label);
    a.href = href;
    a.rel = "noopener noreferrer";
    a.target = "_blank";
    return a;
  }
  const span = el("span", className, label);
  if (url) {
    span.title = "not a web link (not opened): " + String(url).slice(0, 200);
    span.classList.add("inert-link");
  }
  return span;
}

// -- connection ---------------------------------------------------------------------

function wsUrl() {
  const url = new URL("/ws", location.href);
  url.protocol = location.protocol === "https:" ? "wss:" : "ws:";
  const token = new URLSearchParams(location.search).get("token");
  if (token) url.searchParams.set("token", token);
  return url.href;
}

function setConn(stateName, text) {
  const node = $("#conn");
  node.dataset.state = stateName;
  node.textContent = text;
}

function connect() {
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

function send(obj) {
  if (!state.ws || state.ws.readyState !== WebSocket.OPEN) return false;
  state.ws.send(JSON.stringify(obj));
  return true;
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

// -- turns and streams ----------------------------------------------------------------

function newTurn(question) {
  const node = $("#turn-template").content.firstElementChild.cloneNode(true);
  $(".question", node).textContent = question;
  // Each message takes its direction from its own text: Hebrew reads right to left.
  $(".question", node).dir = "auto";
  setLang($(".question", node), question);
  const empty = $("#empty");
  if (empty) empty.remove();
  $("#conversation").appendChild(node);
  node.scrollIntoView({ block: "end" });
  return {
    node,
    text: $(".text", node),
    status: $(".status", node),
    support: $(".support", node),
    usage: $(".usage", node),
    errors: $(".stream-errors", node),
    sources: $(".sources", node),
    citations: $(".citations", node),
    wikit: $(".wikit", node),
    wikitList: $(".wikit-list", node),
    reasoning: $(".reasoning", node),
    reasoningLabel: $(".reasoning-label", node),
    reasoningText: $(".reasoning-text", node),
    refusal: $(".refusal", node),
    refusalText: $(".refusal-text", node),
    tools: $(".tool-calls", node),
  };
}

function newStream(id, turn) {
  const s = {
    id,
    turn,
    text: "",
    lastSeq: 0,
    seqs: [],
    refs: [], // {number, offset} (offset in code points)
    citations: [],
    spans: [], // where citations anchor in the text (answers without [n] markers)
    sources: [],
    grounding: null,
    claims: [], // claim events, as they arrive (live checks, then cloud checkers')
    done: false,
    lost: false,
    verified: null,
    allowGap: false,
    renderQueued: false,
    tail: null, // text node that receives tokens between full renders
    lang: null, // the answer's stated language (done.answer.language), when there is one
    parts: newParts(), // reasoning, tool calls, refusal (kinds.js)
  };
  turn.node.dataset.streamId = id;
  state.streams.set(id, s);
  return s;
}

function setTurnStatus(turn, name, text) {
  turn.status.dataset.state = name;
  turn.status.textContent = text;
}

function setStatus(s, name, text) {
  setTurnStatus(s.turn, name, text);
}

function addTurnError(turn, err) {
  const box = el("div", "stream-error");
  box.appendChild(el("strong", null, String(err.code || "error")));
  box.appendChild(document.createTextNode(": " + String(err.message || "")));
  if (err.retryable) box.appendChild(el("span", "retryable", " (retryable)"));
  turn.errors.appendChild(box);
}

function addStreamError(s, err) {
  addTurnError(s.turn, err);
}

function updateStop() {
  const s = state.current;
  $("#stop").disabled = !(s && !s.done && !s.lost);
}

// -- stream events ------------------------------------------------------------------

function onStreamEvent(ev) {
  const s = state.streams.get(ev.stream_id);
  if (!s) return;
  if (ev.seq <= s.lastSeq) return; // already rendered: never twice
  if (ev.seq !== s.lastSeq + 1) {
    if (s.allowGap) {
      s.allowGap = false; // the relay said these events are gone (resume_gap)
    } else {
      // A hole: ask again from the last event we have instead of rendering out of order.
      send({ type: "resume", stream_id: s.id, after_seq: s.lastSeq });
      return;
    }
  }
  s.lastSeq = ev.seq;
  s.seqs.push(ev.seq);
  switch (ev.type) {
    case "token":
      if (ev.index === 0 && typeof ev.text === "string") {
        settleReasoning(s); // the answer started: the reasoning folds away
        appendToken(s, ev.text);
      }
      break;
    case "reasoning":
      if (ev.index === 0 && typeof ev.text === "string") onReasoning(s, ev.text);
      break;
    case "tool_call":
      if (ev.index === 0) {
        settleReasoning(s);
        onToolCall(s, ev);
      }
      break;
    case "refusal":
      if (ev.index === 0 && typeof ev.text === "string") {
        settleReasoning(s);
        onRefusal(s, ev.text);
      }
      break;
    case "citation_ref":
      if (ev.index === 0) {
        s.refs.push({ number: ev.number, offset: ev.offset });
        queueRender(s);
      }
      break;
    case "citations":
      s.citations = Array.isArray(ev.citations) ? ev.citations : [];
      s.spans = Array.isArray(ev.spans) ? ev.spans.slice(0, MAX_SPANS) : [];
      renderCitations(s);
      queueRender(s);
      break;
    case "sources":
      s.sources = Array.isArray(ev.sources) ? ev.sources : [];
      renderWikit(s);
      queueRender(s);
      break;
    case "grounding":
      s.grounding = ev;
      renderSupport(s);
      queueRender(s);
      break;
    case "claim":
      // A sentence checked while the answer streams: tinted at once (the grounding
      // event, when it comes, has the final word on the whole answer).
      if (s.claims.length < 10000) s.claims.push(ev);
      queueRender(s);
      break;
    case "usage":
      if (Number.isInteger(ev.completion_tokens)) {
        s.turn.usage.textContent = `${ev.completion_tokens} tokens`;
      }
      break;
    case "finish":
      if (ev.index === 0) {
        settleReasoning(s);
        settleToolCalls(s, null);
        setStatus(s, "finishing", s.parts.refusal !== null ? "finishing…" : "checking sources…");
      }
      break;
    case "error":
      addStreamError(s, ev);
      break;
    case "done":
      finish(s, ev.answer || {});
      break;
    default:
      break;
  }
}

function appendToken(s, text) {
  s.text += text;
  if (s.renderQueued) return; // the full render will include it
  if (!s.tail || s.tail.parentNode !== s.turn.text) {
    s.tail = document.createTextNode("");
    s.turn.text.appendChild(s.tail);
  }
  s.tail.appendData(text);
  setDirection(s);
}

function finish(s, answer) {
  s.done = true;
  if (!s.citations.length && Array.isArray(answer.citations) && answer.citations.length) {
    s.citations = answer.citations;
    renderCitations(s);
  }
  if (!s.spans.length && Array.isArray(answer.citation_spans)) {
    s.spans = answer.citation_spans.slice(0, MAX_SPANS);
  }
  s.verified = typeof answer.text === "string" ? answer.text === s.text : null;
  s.turn.text.dataset.verified = String(s.verified);
  s.lang = statedLanguage(answer.language);
  settleReasoning(s);
  settleToolCalls(s, answer.tool_calls);
  if (s.parts.refusal === null && typeof answer.refusal === "string" && answer.refusal) {
    onRefusal(s, answer.refusal);
  }
  if (!s.grounding) showSkipped(s, answer.enrichment_skipped);
  const errors = Array.isArray(answer.errors) ? answer.errors : [];
  const cancelled = errors.some((e) => e && (e.code === "cancelled" || e.code === "abandoned"));
  if (cancelled) setStatus(s, "cancelled", "stopped");
  else if (errors.length) setStatus(s, "error", "done, with errors");
  else if (s.parts.refusal !== null) setStatus(s, "refused", "declined");
  else setStatus(s, "done", "done");
  queueRender(s);
  updateStop();
}

// -- rendering the answer text --------------------------------------------------------

function queueRender(s) {
  if (s.renderQueued) return;
  s.renderQueued = true;
  // One full render per frame however many events arrive; timers when the tab is
  // hidden (animation frames pause there).
  const later = document.hidden ? (fn) => setTimeout(fn, 50) : requestAnimationFrame;
  later(() => {
    s.renderQueued = false;
    renderText(s);
  });
}

/** UTF-16 index of each code point offset in `offsets` (Python counts code points). */
function codePointsToUtf16(text, offsets) {
  // only offsets that can be in a text: one negative would never be met, and every
  // offset after it would map to the end of the text
  const wanted = [...new Set(offsets)].filter((o) => Number.isInteger(o) && o >= 0).sort((a, b) => a - b);
  const out = new Map();
  let cp = 0;
  let u16 = 0;
  let i = 0;
  while (i < wanted.length) {
    if (wanted[i] === cp) {
      out.set(cp, u16);
      i += 1;
      continue;
    }
    if (u16 >= text.length) break;
    const code = text.codePointAt(u16);
    u16 += code > 0xffff ? 2 : 1;
    cp += 1;
  }
  for (; i < wanted.length; i += 1) out.set(wanted[i], text.length);
  return out;
}

function findMarkers(s) {
  const text = s.text;
  const map = codePointsToUtf16(text, s.refs.map((r) => r.offset));
  const byStart = new Map();
  for (const ref of s.refs) {
    const start = map.get(ref.offset);
    if (start === undefined || byStart.has(start)) continue;
    const m = MARKER.exec(text.slice(start, start + 40));
    if (!m) continue;
    const numbers = m[1].split(",").map((n) => Number(n.trim()));
    // "remote [1]." shows "remote¹.": the spaces before a marker go with it (the core's
    // superscript mode does the same), unless they start a line.
    let lead = start;
    while (lead > 0 && (text[lead - 1] === " " || text[lead - 1] === "\t")) lead -= 1;
    if (lead > 0 && text[lead - 1] === "\n") lead = start;
    byStart.set(start, { start: lead, at: start, end: start + m[0].length, numbers });
  }
  return [...byStart.values()].sort((a, b) => a.start - b.start);
}

// Footnotes of span-anchored citations (Anthropic, Gemini, Responses, Cohere answers have
// no [n] in the text): UTF-16 end of each span -> the footnote numbers shown there. A
// citation a [n] marker already shows is not repeated; a span past the text so far waits.
function spanAnchors(s) {
  const at = new Map();
  if (!s.spans.length) return at;
  const marked = new Set(s.refs.map((r) => r.number));
  const chars = s.spans.filter((sp) => sp && !Number.isInteger(sp.end_utf16) && Number.isInteger(sp.end));
  const map = chars.length ? codePointsToUtf16(s.text, chars.map((sp) => sp.end)) : null;
  for (const sp of s.spans) {
    if (!sp || !Number.isInteger(sp.document_index) || sp.document_index < 0) continue;
    const c = s.citations[sp.document_index];
    const n = c && Number.isInteger(c.document_index) ? c.document_index + 1 : sp.document_index + 1;
    if (marked.has(n)) continue;
    let end = Number.isInteger(sp.end_utf16) ? sp.end_utf16 : map && map.get(sp.end);
    if (!Number.isInteger(end) || end <= 0 || end > s.text.length) continue;
    if (isLowSurrogate(s.text.charCodeAt(end)) && isHighSurrogate(s.text.charCodeAt(end - 1))) {
      end += 1; // never between the two halves of a character
    }
    if (!at.has(end)) at.set(end, []);
    if (!at.get(end).includes(n)) at.get(end).push(n);
  }
  return at;
}

function isHighSurrogate(code) {
  return code >= 0xd800 && code <= 0xdbff;
}

function isLowSurrogate(code) {
  return code >= 0xdc00 && code <= 0xdfff;
}

function spanFootnote(s, numbers) {
  const sup = footnote(s, { start: 0, end: 0, numbers });
  delete sup.dataset.marker;
  sup.dataset.span = "true";
  return sup;
}

function claimRanges(s) {
  const g = s.grounding;
  // The grounding event's claims once it came; the live claim events until then.
  const source = g && Array.isArray(g.claims) && g.claims.length ? g.claims : s.claims;
  const len = s.text.length;
  const out = [];
  for (const c of source) {
    if (!c || typeof c !== "object") continue;
    let start = c.start_utf16;
    let end = c.end_utf16;
    if (!Number.isInteger(start) || !Number.isInteger(end)) {
      if (!Number.isInteger(c.start) || !Number.isInteger(c.end)) continue;
      const map = codePointsToUtf16(s.text, [c.start, c.end]);
      start = map.get(c.start);
      end = map.get(c.end);
    }
    start = Math.max(0, Math.min(start, len));
    end = Math.max(start, Math.min(end, len));
    if (end > start) out.push({ start, end, claim: c });
  }
  out.sort((a, b) => a.start - b.start);
  // Claims do not overlap in either API; if they ever do, the earlier one wins.
  const kept = [];
  for (const r of out) if (!kept.length || r.start >= kept[kept.length - 1].end) kept.push(r);
  return kept;
}

function supportClass(claim) {
  if (claim.grounding_check_required === false) return "neutral";
  const live = claim.type === "claim"; // a claim event: its own verdict
  if (live && typeof claim.supported !== "boolean") return "neutral";
  const score = typeof claim.score === "number" ? claim.score : null;
  if (score === null) {
    if (live) return claim.supported ? "supported" : "unsupported";
    return Array.isArray(claim.citation_indices) && claim.citation_indices.length
      ? "supported"
      : "unsupported";
  }
  if (live && claim.supported === false) return "unsupported";
  if (score >= 0.7) return "supported";
  if (score >= 0.4) return "weak";
  return "unsupported";
}

function claimTitle(claim) {
  if (claim.type === "claim") {
    const by = `checked by ${String(claim.checker)}`;
    if (typeof claim.supported !== "boolean") return `${by}: no check needed`;
    const score = typeof claim.score === "number" ? ` (support score ${claim.score.toFixed(2)})` : "";
    return `${by}: ${claim.supported ? "supported" : "not supported by the sources"}${score}`;
  }
  const parts = [];
  if (claim.grounding_check_required === false) parts.push("no check needed");
  if (typeof claim.score === "number") parts.push(`support score ${claim.score.toFixed(2)}`);
  const cited = Array.isArray(claim.citation_indices) ? claim.citation_indices : [];
  parts.push(cited.length ? `supported by ${cited.length} cited chunk(s)` : "no supporting source");
  return parts.join(" — ");
}

function footnoteTarget(s, number) {
  if (s.citations.some((c) => c && c.document_index === number - 1)) return `cite-${s.id}-${number}`;
  if (s.sources.some((src) => src && String(src.quoted_as).trim() === String(number))) {
    return `wikit-${s.id}-${number}`;
  }
  return `cite-${s.id}-${number}`;
}

// Passages arrive as the document's Markdown: show them as text, without the syntax.
function plainText(markdown) {
  return String(markdown)
    .replace(/^\s{0,3}#{1,6}\s+/gm, "")
    .replace(/(\*\*|__)(.+?)\1/g, "$2")
    .replace(/^\s*[-*+]\s+/gm, "• ");
}

function footnote(s, marker) {
  const sup = el("sup", "fn");
  sup.dataset.marker = s.text.slice(marker.at ?? marker.start, marker.end);
  marker.numbers.forEach((n, i) => {
    if (i) sup.appendChild(document.createTextNode(","));
    const a = el("a", null, String(n));
    a.href = "#" + footnoteTarget(s, n);
    a.dataset.footnote = String(n);
    a.setAttribute("aria-label", `source ${n}`);
    sup.appendChild(a);
  });
  return sup;
}

// A footnote never wraps alone onto the next line: the word before it and the footnote
// share one span that does not wrap (the word is taken from the text node just before).
function keptWithWord(target, sup) {
  const prev = target.lastChild;
  if (!prev || prev.nodeType !== Node.TEXT_NODE) return sup;
  const m = /\S+$/u.exec(prev.data);
  if (!m) return sup;
  prev.data = prev.data.slice(0, m.index);
  const keep = el("span", "fn-keep");
  keep.append(document.createTextNode(m[0]), sup);
  return keep;
}

// The direction of a text: that of its first letter (Hebrew and Arabic read right to left).
function directionOf(text) {
  const m = /[A-Za-z\u00C0-\u024F\u0370-\u03FF\u0400-\u04FF\u0590-\u08FF]/.exec(text);
  return m && /[\u0590-\u08FF]/.test(m[0]) ? "rtl" : "ltr";
}

// The answer, its sources and passages follow the answer's direction (set once it has letters).
function setDirection(s) {
  const answer = s.turn.text.closest(".answer");
  if (answer && !answer.dir && /\p{L}/u.test(s.text)) answer.dir = directionOf(s.text);
  // its language: from the first letters (cheap), or as the stream states it
  if (s.lang || s.text.length < 400 || !s.turn.text.hasAttribute("lang")) {
    setLang(s.turn.text, s.text, s.lang);
  }
}

function renderText(s) {
  const root = s.turn.text;
  const text = s.text;
  setDirection(s);
  const markers = findMarkers(s);
  const claims = claimRanges(s);
  const anchors = spanAnchors(s);
  const cuts = new Set([0, text.length]);
  for (const m of markers) cuts.add(m.start).add(m.end);
  for (const p of anchors.keys()) cuts.add(p);
  for (const c of claims) cuts.add(c.start).add(c.end);
  const points = [...cuts].sort((a, b) => a - b);
  const frag = document.createDocumentFragment();
  let mi = 0;
  let ci = 0;
  let mark = null;
  let markClaim = null;
  let prev = frag;
  for (let p = 0; p + 1 < points.length; p += 1) {
    const a = points[p];
    const b = points[p + 1];
    // a span's footnote follows its last character, in that character's element
    if (anchors.has(a)) prev.appendChild(spanFootnote(s, anchors.get(a)));
    while (ci < claims.length && claims[ci].end <= a) ci += 1;
    const claim = ci < claims.length && claims[ci].start <= a ? claims[ci] : null;
    let target = frag;
    if (claim) {
      if (markClaim !== claim) {
        mark = el("mark", "claim " + supportClass(claim.claim));
        mark.title = claimTitle(claim.claim);
        if (claim.claim.type === "claim") mark.dataset.checker = String(claim.claim.checker);
        if (typeof claim.claim.score === "number") mark.dataset.score = String(claim.claim.score);
        frag.appendChild(mark);
        markClaim = claim;
      }
      target = mark;
    } else {
      markClaim = null;
    }
    prev = target;
    while (mi < markers.length && markers[mi].end <= a) mi += 1;
    const marker = mi < markers.length && markers[mi].start <= a ? markers[mi] : null;
    if (marker) {
      if (marker.start === a) target.appendChild(keptWithWord(target, footnote(s, marker)));
      continue;
    }
    target.appendChild(document.createTextNode(text.slice(a, b)));
  }
  if (anchors.has(text.length)) prev.appendChild(spanFootnote(s, anchors.get(text.length)));
  s.tail = document.createTextNode("");
  frag.appendChild(s.tail);
  root.replaceChildren(frag);
}

function renderSupport(s) {
  const g = s.grounding;
  const node = s.turn.support;
  if (!g || typeof g.support_score !== "number") {
    node.hidden = true;
    return;
  }
  node.hidden = false;
  node.dataset.score = String(g.support_score);
  const claims = Array.isArray(g.claims) ? g.claims : [];
  const checked = claims.filter((c) => c.grounding_check_required !== false);
  if (g.nothing_to_check === true || (g.nothing_to_check == null && !checked.length)) {
    // No claim needed a check: the score (1.0) says nothing about support.
    node.textContent = "nothing to check";
    node.title = `grounding check (${String(g.provider)}): no claim needed a check`;
    node.dataset.level = "neutral";
    return;
  }
  const failed = typeof g.unsupported_claims === "number"
    ? g.unsupported_claims
    : checked.filter((c) => !(Array.isArray(c.citation_indices) && c.citation_indices.length)).length;
  let level = supportClass({ score: g.support_score });
  if (failed && level === "supported") level = "weak"; // never green when a claim fails
  node.textContent = `support ${Math.round(g.support_score * 100)}%` + (failed ? ` · ${failed} unsupported` : "");
  node.title = `grounding check (${String(g.provider)}): support score ${g.support_score.toFixed(3)}`;
  node.dataset.level = level;
}

// -- sources panels ------------------------------------------------------------------

function renderCitations(s) {
  const box = s.turn.citations;
  box.replaceChildren();
  const groups = new Map();
  for (const c of s.citations) {
    if (!c || typeof c !== "object") continue;
    const key = [c.document_title, c.document_author, c.document_year, documentUrl(c.source_url)].join("\u0000");
    if (!groups.has(key)) groups.set(key, []);
    groups.get(key).push(c);
  }
  for (const items of groups.values()) {
    items.sort((a, b) => (a.document_index ?? 0) - (b.document_index ?? 0));
    const first = items[0];
    const doc = el("article", "doc");
    setLang(doc, items.map((c) => [c.document_title, c.cited_text].join(" ")).join(" "), first.language);
    const h = el("h3", "doc-title");
    h.appendChild(linkOrText(documentUrl(first.source_url), first.document_title || "Untitled document", "doc-link"));
    doc.appendChild(h);
    const meta = [first.document_author, first.document_year].filter((x) => x !== null && x !== undefined && x !== "");
    if (meta.length) doc.appendChild(el("p", "doc-meta", meta.join(" · ")));
    const list = el("ol", "passages");
    for (const c of items) {
      const li = el("li", "passage");
      if (Number.isInteger(c.document_index)) {
        const n = c.document_index + 1;
        li.id = `cite-${s.id}-${n}`;
        // each passage links to its own place in the document (the URL's #chunk-N)
        li.appendChild(c.source_url ? linkOrText(c.source_url, `[${n}]`, "num") : el("span", "num", `[${n}]`));
      }
      if (c.cited_text_heading) li.appendChild(el("strong", "heading", c.cited_text_heading));
      if (c.cited_text) li.appendChild(el("blockquote", "cited", c.cited_text));
      if (c.document_reference) li.appendChild(el("span", "reference", `reference ${c.document_reference}`));
      list.appendChild(li);
    }
    doc.appendChild(list);
    box.appendChild(doc);
  }
  s.turn.sources.hidden = groups.size === 0;
  if (s.sources.length) renderWikit(s);
}

// A document's URL without the fragment that points at one passage (#chunk-N).
function documentUrl(url) {
  return typeof url === "string" ? url.split("#")[0] : url;
}

function pageLabel(chunk) {
  const a = Number.isInteger(chunk.page_start) ? chunk.page_start + 1 : null;
  const b = Number.isInteger(chunk.page_end) ? chunk.page_end + 1 : null;
  if (a === null) return null;
  return b !== null && b !== a ? `pages ${a}–${b}` : `page ${a}`;
}

function renderWikit(s) {
  const box = s.turn.wikitList;
  box.replaceChildren();
  const groups = new Map();
  let repeated = 0;
  for (const src of s.sources) {
    if (!src || typeof src !== "object" || !src.document) continue;
    const key = String(src.document.id);
    if (!groups.has(key)) groups.set(key, []);
    groups.get(key).push(src);
  }
  for (const items of groups.values()) {
    const d = items[0].document;
    const doc = el("article", "doc");
    const sample = items.map((src) => (src.chunk && src.chunk.data) || "").join(" ");
    setLang(doc, [d.title || d.name || "", sample].join(" "), d.language);
    const h = el("h3", "doc-title");
    h.appendChild(linkOrText(d.url, d.title || d.name || d.id, "doc-link"));
    doc.appendChild(h);
    const ds = items[0].data_source;
    if (ds && (ds.name || ds.id)) doc.appendChild(el("p", "doc-meta", `data source: ${ds.name || ds.id}`));
    const list = el("ol", "passages");
    for (const src of items) {
      const li = el("li", "passage");
      const q = String(src.quoted_as).trim();
      if (/^\d{1,4}$/.test(q)) li.id = `wikit-${s.id}-${q}`;
      li.appendChild(el("span", "num", `[${q}]`));
      const chunk = src.chunk || {};
      const bits = [];
      const pages = pageLabel(chunk);
      if (pages) bits.push(pages);
      if (typeof src.score === "number") bits.push(`score ${src.score.toFixed(3)}`);
      if (chunk.id) bits.push(`chunk ${chunk.id}`);
      if (bits.length) li.appendChild(el("span", "chunk-meta", bits.join(" · ")));
      const cit = citedAs(s, src);
      if (cit) {
        // The Sources panel above quotes this passage: point there, do not repeat it.
        repeated += 1;
        const n = cit.document_index + 1;
        const same = el("a", "same-as", `quoted under Sources [${n}]`);
        same.href = `#cite-${s.id}-${n}`;
        li.appendChild(same);
      } else if (chunk.data) {
        li.appendChild(el("blockquote", "cited", plainText(chunk.data)));
      }
      list.appendChild(li);
    }
    doc.appendChild(list);
    box.appendChild(doc);
  }
  s.turn.wikit.hidden = groups.size === 0;
  s.turn.wikit.dataset.repeated = String(repeated);
}

const squash = (text) => String(text).replace(/\s+/g, " ").trim().toLowerCase();

// The citation that quotes the same passage as a retrieved one (same footnote, and the
// same words, or the same document when the citation quotes nothing), or null: its text
// is shown once, under Sources.
function citedAs(s, src) {
  const q = String(src.quoted_as).trim();
  if (!/^\d{1,4}$/.test(q)) return null;
  const n = Number(q);
  const cit = s.citations.find((c) => c && c.document_index === n - 1);
  if (!cit) return null;
  const data = src.chunk && src.chunk.data ? squash(plainText(src.chunk.data)) : "";
  if (cit.cited_text && data) {
    const cited = squash(cit.cited_text);
    return data.includes(cited) || cited.includes(data) ? cit : null;
  }
  const d = src.document;
  const same = cit.document_title === (d.title || d.name) || documentUrl(cit.source_url) === documentUrl(d.url);
  return same ? cit : null;
}

// -- banner -------------------------------------------------------------------------

function showBanner(text, kind = "error") {
  const b = $("#banner");
  b.textContent = text;
  b.dataset.kind = kind;
  b.hidden = false;
}

function hideBanner() {
  $("#banner").hidden = true;
}

// -- the form -----------------------------------------------------------------------

function ask(question) {
  const ref = `q${state.nextRef++}`;
  const turn = newTurn(question);
  if (!send({ type: "ask", question, ref })) {
    addTurnError(turn, { code: "not_connected", message: "not connected to the relay; try again in a moment" });
    setTurnStatus(turn, "error", "not sent");
    return false;
  }
  state.pending.set(ref, turn);
  return true;
}

$("#ask").addEventListener("submit", (ev) => {
  ev.preventDefault();
  const input = $("#question");
  const question = input.value.trim();
  if (!question) return;
  if (ask(question)) input.value = ""; // a question that was not sent stays to be sent again
});

$("#question").addEventListener("keydown", (ev) => {
  if (ev.key === "Enter" && !ev.shiftKey) {
    ev.preventDefault();
    $("#ask").requestSubmit();
  }
});

$("#stop").addEventListener("click", () => {
  const s = state.current;
  if (s && !s.done) send({ type: "cancel", stream_id: s.id });
});

// Read-only view for tests and debugging, plus a way to simulate a network cut.
window.streamcite = {
  streams: () =>
    [...state.streams.values()].map((s) => ({
      id: s.id,
      text: s.text,
      seqs: s.seqs.slice(),
      done: s.done,
      verified: s.verified,
      claims: s.claims.length,
      spans: s.spans.length,
      ...partsView(s),
    })),
  connected: () => state.connected,
  dropConnection: () => state.ws && state.ws.close(4000, "dropped by the page"),
};

connect();
