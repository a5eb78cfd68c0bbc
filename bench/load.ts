import autocannon from 'autocannon';

export type ScenarioKind = 'baseline' | 'list' | 'read' | 'page' | 'write';

/** One kind of request, driven by many connections at once. */
export interface Scenario {
  name: string;
  kind: ScenarioKind;
  method: 'GET' | 'POST';
  /** Headers instead of the run's (which authenticate as the API does): a page sends its session cookie. */
  headers?: Record<string, string>;
  /** Headers sent besides the run's (or the scenario's own). */
  extraHeaders?: Record<string, string>;
  /**
   * Each request's path is drawn at random. h2load sends the paths of its input file in the same
   * order on every connection, so its 50 connections would ask for the same item or page at about
   * the same moment (and a request for what is being rendered waits for that render): such
   * scenarios are driven by wrk, whose connections take turns on one list of drawn requests.
   */
  random?: true;
  /**
   * wrk only: Lua source defining `next_request()`, which returns the next request's path and body
   * (or nil), drawn inside wrk for every request; `next` then serves the checks made before a run.
   * (The 4,000 requests drawn up front otherwise would fetch each random item again every few
   * seconds.) Every answer of such a run is checked: see LoadResult.unlisted.
   */
  lua?: string;
  /**
   * The next request's path (with query) and, for POST, its form body; `{n}` in either becomes a
   * number unique to the request (whichever generator sends it), so writes never repeat.
   */
  next(): { path: string; body?: string };
}

export interface LoadResult {
  name: string;
  kind: ScenarioKind;
  /** Successful (2xx) responses per second in the measured window. */
  rps: number;
  /** Latency of successful responses in the measured window, ms. */
  p50: number;
  p99: number;
  /** The slowest response, ms (wrk runs only). */
  max?: number;
  /** Which generator measured it. */
  generator?: string;
  /** The same scenario under the other generators (lists and the baseline): how a change of generator shows. */
  others?: { generator: string; rps: number; p99: number }[];
  ok: number;
  /** Over warm-up and measurement: a scenario that fails while warming up is not to be trusted either. */
  non2xx: number;
  /** Connection errors and timeouts, over warm-up and measurement. */
  errors: number;
  /** Count of each status code seen, e.g. { "200": 12000 }, over warm-up and measurement. */
  statuses: Record<string, number>;
  /** Lua-driven runs (Scenario.lua): answers that were JSON arrays (lists) without X-Sprintly-Item-Count. */
  unlisted?: number;
  /** List scenarios: X-Sprintly-Item-Count of a check request (null when missing). */
  itemCount?: string | null;
  /** The server's resident memory right after the scenario, MiB. */
  rssMb?: number;
}

/** What every request of a scenario carries, whichever generator sends it. */
export function headersOf(scenario: Scenario, options: LoadOptions): Record<string, string> {
  return {
    ...(scenario.headers ?? options.headers),
    ...scenario.extraHeaders,
    ...(scenario.method === 'POST' ? { 'content-type': 'application/x-www-form-urlencoded' } : {}),
  };
}

export interface LoadOptions {
  port: number;
  /** Measured seconds. */
  seconds: number;
  /** Seconds of load before the measured window, on the same connections. */
  warmupSeconds: number;
  connections: number;
  headers: Record<string, string>;
}

/** Nearest-rank percentile of sorted values. */
export function percentile(sorted: Float64Array, p: number): number {
  if (!sorted.length) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

/** Latencies of the responses that completed inside a time window. */
class Window {
  private values = new Float64Array(1 << 16);
  count = 0;

  constructor(
    readonly from: number,
    readonly to: number,
  ) {}

  add(at: number, latency: number): void {
    if (at < this.from || at > this.to) return;
    if (this.count === this.values.length) {
      const grown = new Float64Array(this.values.length * 2);
      grown.set(this.values);
      this.values = grown;
    }
    this.values[this.count++] = latency;
  }

  sorted(): Float64Array {
    return this.values.subarray(0, this.count).sort();
  }
}

/**
 * Drives `scenario` at `connections` concurrent keep-alive connections for the warm-up and then
 * the measured seconds in one run, so the measurement sees warm connections: the burst of 50 new
 * connections at the start (whose first requests can wait behind everyone else's) stays in the
 * warm-up. Latencies are taken from each response (autocannon's histogram rounds to whole ms).
 */
export async function runLoad(scenario: Scenario, options: LoadOptions): Promise<LoadResult> {
  let sent = 0;
  const headers = headersOf(scenario, options);
  const settings: autocannon.Options = {
    url: `http://127.0.0.1:${options.port}`,
    connections: options.connections,
    duration: options.warmupSeconds + options.seconds,
    headers,
    requests: [
      {
        method: scenario.method,
        setupRequest: (req) => {
          const next = scenario.next();
          const n = String(++sent);
          req.path = next.path.replaceAll('{n}', n);
          if (next.body !== undefined) req.body = next.body.replaceAll('{n}', n);
          return req;
        },
      },
    ],
  };
  const started = performance.now();
  const window = new Window(
    started + options.warmupSeconds * 1000,
    started + (options.warmupSeconds + options.seconds) * 1000,
  );
  let instance!: autocannon.Instance;
  const finished = new Promise<autocannon.Result>((resolve, reject) => {
    instance = autocannon(settings, (err, result) => (err ? reject(err) : resolve(result)));
  });
  instance.on('response', (_client: unknown, statusCode: number, _bytes: number, responseTime: number) => {
    if (statusCode >= 200 && statusCode < 300) window.add(performance.now(), responseTime);
  });
  const result = await finished;
  const sorted = window.sorted();
  const statuses = Object.fromEntries(
    Object.entries(result.statusCodeStats ?? {}).map(([code, s]) => [code, (s as { count: number }).count]),
  );
  return {
    name: scenario.name,
    kind: scenario.kind,
    rps: window.count / options.seconds,
    p50: percentile(sorted, 50),
    p99: percentile(sorted, 99),
    ok: window.count,
    non2xx: result.non2xx,
    errors: result.errors + result.timeouts,
    statuses,
  };
}

/** Latency at an offered rate below saturation. */
export interface RateResult {
  name: string;
  kind: ScenarioKind;
  /** Requests per second offered, and answered (2xx) in the measured window. */
  offered: number;
  rps: number;
  p50: number;
  p99: number;
  max: number;
  /** Requests sent after their slot (every connection busy), and how late the latest was, ms. */
  late: number;
  latestMs: number;
  non2xx: number;
  errors: number;
}
