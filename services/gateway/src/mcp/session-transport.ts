import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  parseJSONRPCMessage,
  SUPPORTED_PROTOCOL_VERSIONS,
  type JSONRPCMessage,
  type MessageExtraInfo,
  type RequestId,
  type Transport,
  type TransportSendOptions,
} from '@modelcontextprotocol/server';
import { JSONRPC_ERRORS } from './jsonrpc-errors.ts';
import { isPlainObject } from './plain-object.ts';
import type { SessionEventStore } from './session-event-store.ts';

/** The event-store stream of the GET stream: server messages that answer no request. */
const STANDALONE_STREAM = '_GET_stream';

/** How often an open SSE stream gets a comment line, so proxies do not close it as idle. */
export const SSE_KEEP_ALIVE_MS = 15_000;

/** Messages one POST may carry (as the SDK's own transport allows). */
export const MAX_BATCH_MESSAGES = 100;

/** The first revision whose clients read a priming event (an id and an empty data line). */
const PRIMING_SINCE = '2025-11-25';

const SSE_EVENT_PREFIX = 'event: message\nid: ';

export type SessionTransportOptions = {
  /** The id the session's initialize gives out. */
  sessionId: string;
  /** The version the session's initialize negotiated: it decides the priming event, whatever a later request's header says. */
  protocolVersion: string;
  events: SessionEventStore;
  /** The `retry` hint of each priming event. */
  retryMs: number;
  keepAliveMs?: number;
};

/** One HTTP response carrying SSE events: a POST's answers, or the GET stream. */
type Stream = {
  id: string;
  /** Undefined once the client's connection closed or the stream was ended for it to resume. */
  response: ServerResponse | undefined;
  keepAlive: NodeJS.Timeout | undefined;
  /** The POST's requests not yet answered; the stream ends after the last answer. */
  unanswered: Set<RequestId>;
};

type Refusal = { status: number; code: number; message: string };

const refusal = (status: number, code: number, message: string): Refusal => ({ status, code, message });

const NOT_ACCEPTABLE_POST = refusal(406, -32000, 'Not Acceptable: Client must accept both application/json and text/event-stream');
const NOT_ACCEPTABLE_GET = refusal(406, -32000, 'Not Acceptable: Client must accept text/event-stream');
const UNSUPPORTED_MEDIA_TYPE = refusal(415, -32000, 'Unsupported Media Type: Content-Type must be application/json');
const BATCH_TOO_LONG = refusal(400, -32600, `Invalid Request: Batch must not exceed ${MAX_BATCH_MESSAGES} messages`);
const NOT_JSON_RPC = refusal(400, -32700, 'Parse error: Invalid JSON-RPC message');
const ALREADY_INITIALIZED = refusal(400, -32600, 'Invalid Request: Server already initialized');
const ONE_INITIALIZE = refusal(400, -32600, 'Invalid Request: Only one initialization request is allowed');
const UNKNOWN_EVENT = refusal(400, -32000, 'Unknown Last-Event-ID: it names no event of this session');
const STREAM_CONNECTED = refusal(409, -32000, 'Conflict: Stream already has an active connection');
const ONE_GET_STREAM = refusal(409, -32000, 'Conflict: Only one SSE stream is allowed per session');
const METHOD_NOT_ALLOWED = refusal(405, -32000, 'Method not allowed.');
const SESSION_ENDED = refusal(JSONRPC_ERRORS.unknownSession.status, JSONRPC_ERRORS.unknownSession.code, JSONRPC_ERRORS.unknownSession.message);

const unsupportedVersion = (version: string) =>
  refusal(400, -32000, `Bad Request: Unsupported protocol version: ${version} (supported versions: ${SUPPORTED_PROTOCOL_VERSIONS.join(', ')})`);


const MESSAGE_KEYS = new Set(['jsonrpc', 'id', 'method', 'params']);

/**
 * A request or notification that the JSON-RPC schema accepts for certain, with its params untouched: the
 * usual message skips the schema's parse (responses, `_meta` and anything unusual are parsed).
 */
function plainlyValid(message: Record<string, unknown>): boolean {
  if (message.jsonrpc !== '2.0' || typeof message.method !== 'string') return false;
  for (const key in message) if (!MESSAGE_KEYS.has(key)) return false;
  const id = message.id;
  if ('id' in message && typeof id !== 'string' && !Number.isSafeInteger(id)) return false;
  const params = message.params;
  return params === undefined || (isPlainObject(params) && !('_meta' in params));
}

/** The POST body's messages, each a valid JSON-RPC message; undefined when one is not. */
function messagesOf(body: unknown[]): JSONRPCMessage[] | undefined {
  const messages: JSONRPCMessage[] = [];
  for (const raw of body) {
    if (isPlainObject(raw) && plainlyValid(raw)) {
      messages.push(raw as JSONRPCMessage);
      continue;
    }
    try {
      messages.push(parseJSONRPCMessage(raw));
    } catch {
      return undefined;
    }
  }
  return messages;
}

const isRequest = (message: JSONRPCMessage): message is JSONRPCMessage & { id: RequestId; method: string } => 'method' in message && 'id' in message;
const isResponse = (message: JSONRPCMessage): message is JSONRPCMessage & { id: RequestId } => !('method' in message);

function acceptsAll(header: string | undefined, ...types: string[]): boolean {
  return header !== undefined && types.every((type) => header.includes(type));
}

const isJsonContentType = (header: string | undefined) => header !== undefined && (header.split(';', 1)[0] as string).trim().toLowerCase() === 'application/json';

function sseEvent(message: JSONRPCMessage, eventId: string): string {
  return `${SSE_EVENT_PREFIX}${eventId}\ndata: ${JSON.stringify(message)}\n\n`;
}

/**
 * One 2025-era session's Streamable HTTP transport, behind the SDK's public `Transport` interface: the
 * SDK's Server speaks through it, and it writes each answer straight to the Node response as an SSE event
 * with an id from the session's event store (resumable with `Last-Event-ID`), after a priming event for
 * clients of 2025-11-25 or later. The router (mcp-routes.ts) has already answered everything spec 7 fixes
 * (Host, key, session id, duplicate ids, expired events); this answers the transport's own rules as the
 * SDK's transport does (Accept, media type, batch size, message shape, version header, one GET stream).
 */
export class SessionTransport implements Transport {
  sessionId?: string;
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage, extra?: MessageExtraInfo) => void;

  readonly #options: SessionTransportOptions;
  readonly #events: SessionEventStore;
  readonly #primes: boolean;
  readonly #sseHeaders: Record<string, string>;
  /** Open streams: each POST's until its last answer, and the GET stream while it is open. */
  readonly #streams = new Map<string, Stream>();
  readonly #streamOfRequest = new Map<RequestId, Stream>();
  #nextStream = 0;
  #started = false;
  #closed = false;

  constructor(options: SessionTransportOptions) {
    this.#options = options;
    this.#events = options.events;
    this.#primes = options.protocolVersion >= PRIMING_SINCE;
    this.#sseHeaders = {
      'content-type': 'text/event-stream',
      'cache-control': 'no-cache, no-transform',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
      'mcp-session-id': options.sessionId,
    };
  }

  async start(): Promise<void> {
    if (this.#started) throw new Error('Transport already started');
    this.#started = true;
  }

  /** Answers one request of the session: POST (`body` parsed), GET or DELETE. */
  handle(request: IncomingMessage, response: ServerResponse, body?: unknown): void {
    if (this.#closed) return this.#refuse(response, SESSION_ENDED);
    if (request.method === 'POST') return this.#post(request, response, body);
    if (request.method === 'GET') return this.#get(request, response);
    if (request.method === 'DELETE') return this.#delete(request, response);
    // The router routes no other method here; as the SDK's transport answers one.
    response.setHeader('allow', 'GET, POST, DELETE');
    return this.#refuse(response, METHOD_NOT_ALLOWED);
  }

  /** Messages that answer no request go to the GET stream; the rest to their request's stream. */
  async send(message: JSONRPCMessage, options?: TransportSendOptions): Promise<void> {
    const answers = isResponse(message);
    const requestId = answers ? message.id : options?.relatedRequestId;
    if (requestId === undefined) {
      const eventId = this.#events.store(STANDALONE_STREAM, message);
      const standalone = this.#streams.get(STANDALONE_STREAM)?.response;
      standalone?.write(sseEvent(message, eventId));
      return;
    }
    // A request no longer pending (cancelled, or its session closed) has nothing left to carry a message.
    const stream = this.#streamOfRequest.get(requestId);
    if (!stream) return;
    const text = sseEvent(message, this.#events.store(stream.id, message));
    if (!answers) {
      stream.response?.write(text);
      return;
    }
    if (this.#settle(stream, requestId)) stream.response?.write(text);
    else this.#finish(stream, text);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const stream of this.#streams.values()) this.#detach(stream, true);
    this.#streams.clear();
    this.#streamOfRequest.clear();
    this.onclose?.();
  }

  /** Streams open now (each POST's until its last answer, and the GET stream). */
  get openStreams(): number {
    return this.#streams.size;
  }

  #refuse(response: ServerResponse, answer: Refusal): void {
    response
      .writeHead(answer.status, { 'content-type': 'application/json' })
      .end(JSON.stringify({ jsonrpc: '2.0', error: { code: answer.code, message: answer.message }, id: null }));
  }

  #versionRefusal(request: IncomingMessage): Refusal | undefined {
    const version = request.headers['mcp-protocol-version'];
    if (typeof version === 'string' && !SUPPORTED_PROTOCOL_VERSIONS.includes(version)) return unsupportedVersion(version);
    return undefined;
  }

  #post(request: IncomingMessage, response: ServerResponse, body: unknown): void {
    if (!acceptsAll(request.headers.accept, 'application/json', 'text/event-stream')) return this.#refuse(response, NOT_ACCEPTABLE_POST);
    if (!isJsonContentType(request.headers['content-type'])) return this.#refuse(response, UNSUPPORTED_MEDIA_TYPE);
    const batch = Array.isArray(body) ? body : [body];
    if (batch.length > MAX_BATCH_MESSAGES) return this.#refuse(response, BATCH_TOO_LONG);
    const messages = messagesOf(batch);
    if (!messages) return this.#refuse(response, NOT_JSON_RPC);

    const initializes = messages.filter((message) => 'method' in message && message.method === 'initialize').length;
    if (initializes > 0) {
      if (this.sessionId !== undefined) return this.#refuse(response, ALREADY_INITIALIZED);
      if (messages.length > 1) return this.#refuse(response, ONE_INITIALIZE);
      this.sessionId = this.#options.sessionId;
    } else {
      const refused = this.#versionRefusal(request);
      if (refused) return this.#refuse(response, refused);
    }

    const extra: MessageExtraInfo = {};
    const requests = messages.filter(isRequest);
    if (requests.length === 0) {
      for (const message of messages) this.onmessage?.(message, extra);
      this.#forgetCancelled(messages);
      response.writeHead(202).end();
      return;
    }

    this.#nextStream += 1;
    const stream: Stream = { id: `post-${this.#nextStream}`, response, keepAlive: undefined, unanswered: new Set() };
    for (const message of requests) {
      stream.unanswered.add(message.id);
      this.#streamOfRequest.set(message.id, stream);
    }
    this.#streams.set(stream.id, stream);
    this.#open(stream);
    if (this.#primes) {
      const primingId = this.#events.store(stream.id, null);
      response.write(`id: ${primingId}\nretry: ${this.#options.retryMs}\ndata: \n\n`);
      extra.closeSSEStream = () => this.#detach(stream, true);
      extra.closeStandaloneSSEStream = () => {
        const standalone = this.#streams.get(STANDALONE_STREAM);
        if (standalone) this.#endStandalone(standalone);
      };
    }
    try {
      for (const message of messages) this.onmessage?.(message, extra);
    } catch (error) {
      this.#streams.delete(stream.id);
      for (const id of stream.unanswered) this.#streamOfRequest.delete(id);
      this.#detach(stream, false);
      throw error;
    }
    this.#forgetCancelled(messages);
  }

  /**
   * The SDK's Server sends no answer to a request the client cancelled (`notifications/cancelled`), as MCP
   * says; such a request stops being pending here, and a stream left with none ends instead of staying open.
   */
  #forgetCancelled(messages: JSONRPCMessage[]): void {
    for (const message of messages) {
      if (!('method' in message) || message.method !== 'notifications/cancelled' || 'id' in message) continue;
      const requestId = (message.params as { requestId?: unknown } | undefined)?.requestId;
      if (typeof requestId !== 'string' && typeof requestId !== 'number') continue;
      const stream = this.#streamOfRequest.get(requestId);
      if (stream && !this.#settle(stream, requestId)) this.#finish(stream);
    }
  }

  /** Takes a request off its stream; true while the stream still has requests unanswered. */
  #settle(stream: Stream, requestId: RequestId): boolean {
    stream.unanswered.delete(requestId);
    this.#streamOfRequest.delete(requestId);
    return stream.unanswered.size > 0;
  }

  /** Ends a POST's stream once none of its requests is pending, with its last event when there is one. */
  #finish(stream: Stream, lastEvent?: string): void {
    this.#streams.delete(stream.id);
    clearInterval(stream.keepAlive);
    stream.response?.end(lastEvent);
    stream.response = undefined;
  }

  #get(request: IncomingMessage, response: ServerResponse): void {
    if (!acceptsAll(request.headers.accept, 'text/event-stream')) return this.#refuse(response, NOT_ACCEPTABLE_GET);
    const refused = this.#versionRefusal(request);
    if (refused) return this.#refuse(response, refused);
    const lastEventId = request.headers['last-event-id'];
    if (typeof lastEventId === 'string' && lastEventId !== '') return this.#replay(response, lastEventId);
    if (this.#streams.has(STANDALONE_STREAM)) return this.#refuse(response, ONE_GET_STREAM);
    this.#openStandalone(response);
  }

  #openStandalone(response: ServerResponse): void {
    const stream: Stream = { id: STANDALONE_STREAM, response, keepAlive: undefined, unanswered: new Set() };
    this.#streams.set(STANDALONE_STREAM, stream);
    this.#open(stream);
  }

  /**
   * Sends what a stream's client missed after `lastEventId`, then carries the rest of that stream: a POST
   * still answering goes on here, the GET stream stays open, and a POST already answered in full ends.
   */
  #replay(response: ServerResponse, lastEventId: string): void {
    const kept = this.#events.after(lastEventId);
    if (!kept) return this.#refuse(response, UNKNOWN_EVENT);
    const live = this.#streams.get(kept.streamId);
    if (live?.response) return this.#refuse(response, STREAM_CONNECTED);
    response.writeHead(200, this.#sseHeaders);
    response.flushHeaders();
    for (const event of kept.events) response.write(sseEvent(event.message, event.id));
    if (live) {
      live.response = response;
      this.#open(live);
    } else if (kept.streamId === STANDALONE_STREAM) {
      this.#openStandalone(response);
    } else {
      response.end();
    }
  }

  #delete(request: IncomingMessage, response: ServerResponse): void {
    const refused = this.#versionRefusal(request);
    if (refused) return this.#refuse(response, refused);
    response.writeHead(200).end();
    void this.close();
  }

  /**
   * Writes the SSE head (once per response), arms the keep-alive, and forgets the response when its client
   * leaves. A GET stream's head is sent at once (Node holds it until the first write, and a client waits for
   * it); a POST's goes with its first event.
   */
  #open(stream: Stream): void {
    const response = stream.response as ServerResponse;
    if (!response.headersSent) {
      response.writeHead(200, this.#sseHeaders);
      if (stream.id === STANDALONE_STREAM) response.flushHeaders();
    }
    stream.keepAlive = setInterval(() => response.write(': keepalive\n\n'), this.#options.keepAliveMs ?? SSE_KEEP_ALIVE_MS);
    stream.keepAlive.unref();
    response.once('close', () => {
      if (stream.response !== response) return;
      this.#detach(stream, false);
      if (stream.id === STANDALONE_STREAM && this.#streams.get(STANDALONE_STREAM) === stream) this.#streams.delete(STANDALONE_STREAM);
    });
  }

  /** Parts a stream from its response (ending it when `end`); a POST's stream still waits for its answers. */
  #detach(stream: Stream, end: boolean): void {
    clearInterval(stream.keepAlive);
    stream.keepAlive = undefined;
    const response = stream.response;
    stream.response = undefined;
    if (end && response && !response.writableEnded) response.end();
  }

  #endStandalone(stream: Stream): void {
    this.#detach(stream, true);
    this.#streams.delete(STANDALONE_STREAM);
  }
}
