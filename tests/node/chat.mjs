// Drive a streamcite UI message stream endpoint with the AI SDK's own client:
// DefaultChatTransport sends the request, readUIMessageStream builds the UIMessage.
// Usage: node chat.mjs URL QUESTION  -> prints {"message": UIMessage, "errors": [...]}
import { DefaultChatTransport, readUIMessageStream } from 'ai';

const [url, question] = process.argv.slice(2);
const transport = new DefaultChatTransport({ api: url });
const errors = [];
const stream = await transport.sendMessages({
  chatId: 'c1',
  trigger: 'submit-message',
  messageId: undefined,
  messages: [{ id: 'u1', role: 'user', parts: [{ type: 'text', text: question }] }],
  abortSignal: new AbortController().signal,
});
let message;
for await (const m of readUIMessageStream({ stream, onError: e => errors.push(String(e)) })) {
  message = m;
}
console.log(JSON.stringify({ message, errors }));
