import http from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import type { Config } from '../config.js';
import { EARLY_ANSWER_HEADERS } from './security-headers.js';

/**
 * Server options that keep one slow or greedy client from holding the process: the whole request
 * (head and body) must arrive within the request timeout, idle keep-alive connections close.
 * Node checks running requests against the timeout on an interval (30 s by default, which would let
 * a 30 s limit stretch to a minute); a tenth of the limit, at most a second, keeps it close.
 */
export function connectionOptions(config: Config) {
  const checkEveryMs = Math.max(10, Math.min(1_000, Math.round(config.requestTimeoutMs / 10)));
  return {
    requestTimeout: config.requestTimeoutMs,
    keepAliveTimeout: config.keepAliveTimeoutMs,
    http: {
      requestTimeout: config.requestTimeoutMs,
      headersTimeout: config.requestTimeoutMs,
      connectionsCheckingInterval: checkEveryMs,
    },
  };
}

/**
 * An `Expect` header other than 100-continue: Node would answer 417 with an empty body; this
 * gives the interface's error shape.
 */
export function answerExpectations(server: http.Server): void {
  server.on('checkExpectation', (_request: http.IncomingMessage, response: http.ServerResponse) => {
    const body = JSON.stringify({ code: 417, message: 'Of the Expect header only 100-continue is supported.' });
    response.writeHead(417, {
      'Content-Type': 'application/json; charset=utf-8',
      'Content-Length': Buffer.byteLength(body),
      ...EARLY_ANSWER_HEADERS,
      Connection: 'close',
    });
    response.end(body);
  });
}

/** What a client whose bytes Node's HTTP parser refused (or that was too slow) is told. */
function clientErrorAnswer(code: string | undefined, config: Config): { status: number; message: string } {
  switch (code) {
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return { status: 408, message: `The request did not arrive in full within ${config.requestTimeoutMs / 1000} s.` };
    case 'HPE_HEADER_OVERFLOW':
      return { status: 431, message: `The request headers are larger than ${http.maxHeaderSize / 1024} KiB.` };
    case 'HPE_CHUNK_EXTENSIONS_OVERFLOW':
      return { status: 413, message: 'The chunk extensions of the request body are too large.' };
    default:
      return { status: 400, message: 'The request could not be read as HTTP/1.1.' };
  }
}

/** After the answer, a client still sending is given this long to stop before the socket is dropped. */
const LINGER_MS = 2_000;

/**
 * Fastify's clientErrorHandler: errors Node meets before a request reaches the app (malformed
 * HTTP, headers too large, a request not received within the timeout) are answered in the
 * interface's error shape, then the connection is closed. The answer is followed by a FIN rather
 * than a reset, so a client still sending reads it; a client that keeps sending is dropped shortly.
 */
export function clientErrorHandler(config: Config) {
  return function (this: FastifyInstance, error: NodeJS.ErrnoException, socket: Socket): void {
    if (error.code === 'ECONNRESET' || socket.destroyed) return;
    // A response already under way on this socket cannot be followed by another.
    const inFlight = (socket as Socket & { _httpMessage?: http.ServerResponse })._httpMessage;
    if (socket.writable && !inFlight?.headersSent) {
      const { status, message } = clientErrorAnswer(error.code, config);
      this.log.info({ status, err: error.code ?? error.message }, 'client error');
      const body = JSON.stringify({ code: status, message });
      socket.end(
        `HTTP/1.1 ${status} ${http.STATUS_CODES[status]}\r\n` +
          'Content-Type: application/json; charset=utf-8\r\n' +
          `Content-Length: ${Buffer.byteLength(body)}\r\n` +
          Object.entries(EARLY_ANSWER_HEADERS)
            .map(([name, value]) => `${name}: ${value}\r\n`)
            .join('') +
          'Connection: close\r\n\r\n' +
          body,
      );
      setTimeout(() => socket.destroy(), LINGER_MS).unref();
    } else {
      socket.destroy();
    }
  };
}

/**
 * Caps the connections the process holds open; beyond it Node closes new ones as they arrive,
 * which a load balancer or client retries. Refusals are logged at most every 10 s.
 */
export function capConnections(server: http.Server, max: number, log: FastifyBaseLogger): void {
  server.maxConnections = max;
  let lastLogged = 0;
  let dropped = 0;
  server.on('drop', () => {
    dropped += 1;
    const now = Date.now();
    if (now - lastLogged < 10_000) return;
    log.warn({ maxConnections: max, dropped }, 'connections refused: too many open');
    lastLogged = now;
    dropped = 0;
  });
}
