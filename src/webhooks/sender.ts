import http from 'node:http';
import https from 'node:https';
import { type Clock, systemClock } from '../time.js';
import { checkLiteralHost, ForbiddenTargetError, guardedLookup } from './targets.js';

/** How one POST to a receiver went. */
export interface Answer {
  /** The receiver's status code, when it answered at all. */
  status?: number;
  /** What the receiver's Retry-After asks for, in ms from now. */
  retryAfterMs?: number;
  /** Why it did not succeed: the status and the start of the receiver's body, or why no answer came. */
  error?: string;
  /** The target is, or resolves to, an address webhooks may not reach: trying again changes nothing. */
  forbidden?: boolean;
  durationMs: number;
}

/** The start of a receiver's answer kept for the log; the rest is read no further. */
const KEPT_BODY = 1024;

/** `Retry-After` as seconds or an HTTP date, in ms from now; undefined when absent or unreadable. */
export function parseRetryAfter(value: string | undefined, now = Date.now()): number | undefined {
  if (!value) return undefined;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  const at = Date.parse(text);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/**
 * POSTs deliveries, each with a deadline (connect, send, and the answer's status and first bytes)
 * so that a receiver that hangs holds one delivery, never the worker. Connections are not kept
 * alive: every delivery resolves and checks its host afresh (see guardedLookup), and no
 * connection lingers to a receiver that stopped answering.
 */
export class WebhookSender {
  private readonly httpAgent: http.Agent;
  private readonly httpsAgent: https.Agent;

  constructor(
    private readonly options: { timeoutMs: number; allowPrivate: boolean },
    /** Whose time the deadline runs on: the job runner's, so a test moves it instead of waiting. */
    private readonly clock: Clock = systemClock,
  ) {
    const lookup = guardedLookup(options.allowPrivate);
    this.httpAgent = new http.Agent({ keepAlive: false, lookup });
    this.httpsAgent = new https.Agent({ keepAlive: false, lookup });
  }

  /** Sends `body`; resolves with what happened, never rejects. */
  post(target: string, body: Buffer, headers: Record<string, string>): Promise<Answer> {
    const started = this.clock.now();
    return new Promise((resolve) => {
      let settled = false;
      let status: number | undefined;
      let retryAfterMs: number | undefined;
      let kept = '';
      let cancelDeadline: (() => void) | undefined;
      const done = (outcome: Omit<Answer, 'durationMs'>) => {
        if (settled) return;
        settled = true;
        cancelDeadline?.();
        resolve({ ...outcome, durationMs: Math.max(0, this.clock.now() - started) });
      };
      const answered = () => {
        const ok = status! >= 200 && status! < 300;
        const snippet = kept.replace(/\s+/g, ' ').trim().slice(0, 200);
        done({ status, retryAfterMs, error: ok ? undefined : `HTTP ${status}${snippet ? `: ${snippet}` : ''}` });
      };
      const failed = (err: unknown) => {
        const forbidden = err instanceof ForbiddenTargetError;
        done({ error: (err instanceof Error ? err.message : String(err)).slice(0, 500), forbidden });
      };

      let request: http.ClientRequest;
      try {
        const url = new URL(target);
        checkLiteralHost(url, this.options.allowPrivate);
        const secure = url.protocol === 'https:';
        request = (secure ? https : http).request(url, {
          method: 'POST',
          agent: secure ? this.httpsAgent : this.httpAgent,
          headers: { ...headers, 'content-length': String(body.length) },
        });
      } catch (err) {
        failed(err);
        return;
      }
      cancelDeadline = this.clock.after(this.options.timeoutMs, () => {
        // An answer that began in time counts; one that never came is a timeout.
        if (status !== undefined) answered();
        else failed(new Error(`No answer within ${Math.round(this.options.timeoutMs / 1000)} s.`));
        request.destroy();
      });
      request.on('error', failed);
      request.on('response', (response) => {
        status = response.statusCode ?? 0;
        retryAfterMs = parseRetryAfter(response.headers['retry-after']);
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => {
          kept += chunk;
          if (kept.length >= KEPT_BODY) response.destroy();
        });
        response.on('error', () => undefined);
        response.on('close', answered);
      });
      request.end(body);
    });
  }

  close(): void {
    this.httpAgent.destroy();
    this.httpsAgent.destroy();
  }
}
