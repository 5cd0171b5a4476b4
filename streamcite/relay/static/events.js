// The stream's events, in order and exactly once: each event kind goes to the module
// that shows it (render.js, footnotes.js, claims.js, sources.js, kinds.js, ptools.js).

import { renderSupport } from "./claims.js";
import {
  onReasoning,
  onRefusal,
  onToolCall,
  settleReasoning,
  settleToolCalls,
  showSkipped,
} from "./kinds.js";
import { statedLanguage } from "./lang.js";
import { onProviderTool, settleProviderTools } from "./ptools.js";
import { queueRender, setDirection } from "./render.js";
import { renderCitations, renderWikit } from "./sources.js";
import { MAX_SPANS, send, state } from "./state.js";
import { addStreamError, setStatus, updateStop } from "./turns.js";

export function onStreamEvent(ev) {
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
    case "provider_tool":
      if (ev.index === 0) {
        settleReasoning(s);
        onProviderTool(s, ev);
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
  settleProviderTools(s, answer.provider_tools);
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
