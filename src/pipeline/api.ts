import { EXIT, Failure } from './failure.js';

/** How long the server has to answer before the command gives up (a retry is safe: see the Idempotency-Key). */
export const ANSWER_TIMEOUT_MS = 60_000;

export interface Credentials {
  key: string;
  /** With an email the key goes as HTTP Basic (`email:key`), without one as a Bearer token. */
  email?: string;
}

export interface DeployRequest {
  productId: number;
  environment: string;
  numbers: number[];
  version: string;
  notes?: string;
  dryRun: boolean;
  idempotencyKey: string;
}

/** What the server answered: its JSON (an object) and the text as it came. */
export interface Answer {
  json: Record<string, unknown>;
  text: string;
}

function authorization({ key, email }: Credentials): string {
  return email ? `Basic ${Buffer.from(`${email}:${key}`).toString('base64')}` : `Bearer ${key}`;
}

/** Why a request got no answer, in a few words: the system's error code where there is one. */
function unreachableReason(error: unknown): string {
  if (error instanceof Error && error.name === 'TimeoutError') return `no answer within ${ANSWER_TIMEOUT_MS / 1000} s`;
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  return cause?.code ?? cause?.message ?? (error as Error).message;
}

/** The server's own error message (docs/INTERFACE.md §3), with the parameters it names. */
function refusal(status: number, json: Record<string, unknown> | undefined): string {
  if (typeof json?.message !== 'string')
    return `the server answered ${status} without a Shiplog error (is the URL the Shiplog server's?)`;
  const errors =
    json.errors && typeof json.errors === 'object' ? Object.entries(json.errors as Record<string, unknown>) : [];
  const detail = errors.length ? ` (${errors.map(([k, v]) => `${k} ${String(v)}`).join('; ')})` : '';
  return `the server refused the deploy (${status}): ${json.message}${detail}`;
}

function parseObject(text: string): Record<string, unknown> | undefined {
  try {
    const json: unknown = JSON.parse(text);
    return json && typeof json === 'object' && !Array.isArray(json) ? (json as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * POSTs the deploy form to `base`/api/products/{id}/deploys.json and returns the server's answer;
 * every other outcome is a Failure: refused (with the server's message and status) or unreachable.
 * Redirects are not followed: a POST turned into a GET would list deploys instead of recording one.
 */
export async function postDeploy(base: URL, credentials: Credentials, request: DeployRequest): Promise<Answer> {
  const url = new URL(`api/products/${request.productId}/deploys.json`, base);
  const form = new URLSearchParams({
    environment: request.environment,
    numbers: request.numbers.join(','),
    version: request.version,
  });
  if (request.notes !== undefined) form.set('notes', request.notes);
  if (request.dryRun) form.set('dry_run', 'true');
  let response: Response;
  let text: string;
  try {
    response = await fetch(url, {
      method: 'POST',
      headers: {
        authorization: authorization(credentials),
        'content-type': 'application/x-www-form-urlencoded',
        accept: 'application/json',
        'idempotency-key': request.idempotencyKey,
      },
      body: form.toString(),
      redirect: 'manual',
      signal: AbortSignal.timeout(ANSWER_TIMEOUT_MS),
    });
    text = await response.text();
  } catch (error) {
    throw new Failure(EXIT.unreachable, `cannot reach ${base.origin}: ${unreachableReason(error)}`);
  }
  if (response.status >= 300 && response.status < 400) {
    const location = response.headers.get('location');
    throw new Failure(
      EXIT.refused,
      `the server answered ${response.status}, redirecting to ${location ?? 'nowhere'}: ` +
        'give the address it names as the URL',
    );
  }
  const json = parseObject(text);
  if (!response.ok) throw new Failure(EXIT.refused, refusal(response.status, json));
  if (!json || (typeof json.id !== 'number' && json.dry_run !== true)) {
    throw new Failure(
      EXIT.refused,
      `the server answered ${response.status} with no deploy (is the URL the Shiplog server's?)`,
    );
  }
  return { json, text };
}
