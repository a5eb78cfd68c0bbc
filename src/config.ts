import path from 'node:path';

export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';

/** Everything the service reads from its environment, validated once and frozen. */
export interface Config {
  readonly port: number;
  readonly host: string;
  readonly dataDir: string;
  readonly publicUrl: string;
  readonly mailDomain: string;
  readonly mailFrom: string;
  readonly logLevel: LogLevel;
  /** smtp:// or smtps:// URL of the mail server; without it mail is written as .eml files. */
  readonly smtpUrl: string | undefined;
  /** How long a delivery worker holds a claimed message before another may take it over. */
  readonly mailLeaseSeconds: number;
  /** The deadline of one delivery attempt; shorter than the lease. */
  readonly mailSendTimeoutSeconds: number;
  /** How often one message is tried while the mail server cannot be reached. */
  readonly mailProbeSeconds: number;
  /** How long due mail may stand still before /health reports delivery as stalled. */
  readonly mailStallSeconds: number;
  /** postgres:// URL; without it the embedded SQLite database under dataDir is used. */
  readonly databaseUrl: string | undefined;
  readonly pgPoolMax: number;
  /** SQLite's page cache per connection, in MiB. */
  readonly sqliteCacheMb: number;
  /** What kept answers and kept item JSON hold together, in MiB; 0 keeps nothing. */
  readonly answerCacheMb: number;
  /** Reads started per turn of the event loop; others wait for the next, changes never (http/read-turns.ts). */
  readonly readsPerTurn: number;
  readonly pgStatementTimeoutMs: number;
  readonly pgConnectTimeoutMs: number;
  /** How often the live pages read revisions when no notification tells them (LIVE_POLL_MS). */
  readonly livePollMs: number;
  /** A request (head and body) must arrive within this; a slower one is answered 408 and cut off. */
  readonly requestTimeoutMs: number;
  /** An idle keep-alive connection is closed after this. */
  readonly keepAliveTimeoutMs: number;
  /** Open connections one process accepts; further ones are closed at once. */
  readonly maxConnections: number;
  /** On SIGTERM, how long readiness fails before the listener closes (the balancer's checks notice meanwhile). */
  readonly drainDelayMs: number;
  /** On SIGTERM, how long requests in flight have to finish once the listener is closed; then they are cut. */
  readonly drainTimeoutMs: number;
  /** A signed-in browser that makes no request for this long is signed out. */
  readonly webSessionIdleMinutes: number;
  /** A page session ends this long after signing in, however active it has been. */
  readonly webSessionLifetimeDays: number;
  /** The deadline of one webhook delivery: connect, send, and the receiver's answer. */
  readonly webhookTimeoutSeconds: number;
  /** How long a worker holds a claimed webhook delivery before another may take it over. */
  readonly webhookLeaseSeconds: number;
  /** A webhook is disabled after this many failed attempts in a row (or 24 hours of failing). */
  readonly webhookDisableAfterFailures: number;
  /** Whether webhooks may point at loopback, private and link-local addresses (a receiver on the same network). */
  readonly webhooksAllowPrivate: boolean;
  /** Webhook events and deliveries older than this many days are deleted. */
  readonly webhookRetentionDays: number;
  /** The bearer token `GET /metrics` asks for; without it there is no `/metrics`. */
  readonly metricsToken: string | undefined;
  /** Requests one user (by API key or page session) may make per window; 0 for no limit. */
  readonly rateLimitPerKey: number;
  /** Requests one client address may make per window without proving who it is; 0 for no limit. */
  readonly rateLimitPerAddress: number;
  readonly rateLimitWindowSeconds: number;
  /** Where requests are counted: in PostgreSQL, shared by every instance, or in each process. */
  readonly rateLimitStore: 'database' | 'process';
  /** The most one JSON answer may weigh, in bytes: pages end early rather than pass it. */
  readonly maxAnswerBytes: number;
  /** The largest file one attachment may be, in MiB. */
  readonly attachmentMaxMb: number;
  /** What a product's attachments may weigh together, in MiB. */
  readonly attachmentsPerProductMb: number;
  /** The port of the SMTP listener for replies and files by mail; none (undefined): no listener. */
  readonly mailInboundPort: number | undefined;
  readonly mailInboundHost: string;
  /** The largest inbound message, whole (text, attachments and their encoding), in MiB. */
  readonly mailInboundMaxMb: number;
}

export class ConfigError extends Error {}

const LOG_LEVELS: readonly LogLevel[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

function parsePort(raw: string, name = 'PORT'): number {
  if (!/^\d+$/.test(raw) || Number(raw) < 1 || Number(raw) > 65535) {
    throw new ConfigError(`${name} must be a whole number from 1 to 65535, got "${raw}".`);
  }
  return Number(raw);
}

function parseUrl(name: string, raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError(`${name} must be an absolute http(s) URL, got "${raw}".`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new ConfigError(`${name} must be an absolute http(s) URL, got "${raw}".`);
  }
  return raw.replace(/\/+$/, '');
}

function parseDomain(name: string, raw: string): string {
  if (!/^[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*$/.test(raw)) {
    throw new ConfigError(`${name} must be a domain name such as items.example.com, got "${raw}".`);
  }
  return raw.toLowerCase();
}

/** A URL setting that must use one of `protocols` (`smtp:`, ...); the message never echoes it (passwords). */
function parseServiceUrl(name: string, raw: string, protocols: string[], example: string): string {
  let protocol: string;
  try {
    protocol = new URL(raw).protocol;
  } catch {
    throw new ConfigError(`${name} must be a URL such as ${example}.`);
  }
  if (!protocols.includes(protocol)) {
    throw new ConfigError(
      `${name} must start with ${protocols.map((p) => `${p}//`).join(' or ')}, got "${protocol}//".`,
    );
  }
  return raw;
}

const parseSmtpUrl = (raw: string): string =>
  parseServiceUrl('SMTP_URL', raw, ['smtp:', 'smtps:'], 'smtp://user:password@mail.example.com:587');

export const parseDatabaseUrl = (raw: string): string =>
  parseServiceUrl('DATABASE_URL', raw, ['postgres:', 'postgresql:'], 'postgres://user:password@host:5432/shiplog');

function parsePositive(name: string, raw: string, max = Number.MAX_SAFE_INTEGER): number {
  if (!/^\d+$/.test(raw) || Number(raw) < 1 || Number(raw) > max) {
    const range = max === Number.MAX_SAFE_INTEGER ? 'of at least 1' : `from 1 to ${max}`;
    throw new ConfigError(`${name} must be a whole number ${range}, got "${raw}".`);
  }
  return Number(raw);
}

function parseFlag(name: string, raw: string): boolean {
  const value = raw.trim().toLowerCase();
  if (['1', 'true', 'yes'].includes(value)) return true;
  if (['0', 'false', 'no', ''].includes(value)) return false;
  throw new ConfigError(`${name} must be 1 or 0, got "${raw}".`);
}

/** A count where 0 means "no limit". */
/** `database` (the default on PostgreSQL, and only there) or `process`. */
function parseRateLimitStore(raw: string | undefined, postgres: boolean): 'database' | 'process' {
  if (!raw) return postgres ? 'database' : 'process';
  if (raw !== 'database' && raw !== 'process') {
    throw new ConfigError(`RATE_LIMIT_STORE must be database or process, got "${raw}".`);
  }
  if (raw === 'database' && !postgres) {
    throw new ConfigError('RATE_LIMIT_STORE=database needs DATABASE_URL: on SQLite the one process counts.');
  }
  return raw;
}

function parseWhole(name: string, raw: string, max: number): number {
  if (!/^\d+$/.test(raw) || Number(raw) > max) {
    throw new ConfigError(`${name} must be a whole number from 0 to ${max}, got "${raw}".`);
  }
  return Number(raw);
}

function parseLimit(name: string, raw: string, max: number): number {
  if (!/^\d+$/.test(raw) || Number(raw) > max) {
    throw new ConfigError(`${name} must be a whole number from 0 (no limit) to ${max}, got "${raw}".`);
  }
  return Number(raw);
}

/** Node's timers take at most 2^31-1 ms; a larger value would silently fire at once. */
const MAX_TIMER_MS = 2_147_483_647;

function parseMailFrom(raw: string): string {
  // Either a bare address or "Name <address>".
  if (!/^([^<>]*<[^\s<>@]+@[^\s<>@]+>|[^\s<>@]+@[^\s<>@]+)$/.test(raw.trim())) {
    throw new ConfigError(`MAIL_FROM must be an address such as "Shiplog <shiplog@example.com>", got "${raw}".`);
  }
  return raw.trim();
}

/** A secret for a header: long enough not to be guessed, and never echoed in the message. */
function parseMetricsToken(raw: string): string {
  if (!/^[\x21-\x7e]{16,}$/.test(raw)) {
    throw new ConfigError(
      'METRICS_TOKEN must be at least 16 characters without spaces (letters, digits, punctuation), ' +
        'such as the output of `openssl rand -hex 32`.',
    );
  }
  return raw;
}

/**
 * PG_POOL_MAX's default: 4 connections for reads and 2 for transactions (poolSizes). Reads wait
 * on the network, and each one in flight adds its answer to every turn of the event loop, which
 * each statement of a change waits for: beside the saturated read mix, 4 read connections
 * answered about as many reads as 7 and the writes in half the time.
 */
export const DEFAULT_PG_POOL_MAX = 6;

/**
 * How an instance's PostgreSQL connections (PG_POOL_MAX) are shared: a quarter of them (at least
 * one) kept for transactions, the rest for statements outside one. With a single connection both
 * share it.
 */
export function poolSizes(max: number): { reads: number; changes: number } {
  if (max < 2) return { reads: max, changes: 0 };
  const changes = Math.ceil(max / 4);
  return { reads: max - changes, changes };
}

/** What openDatabase needs from the configuration. */
export function databaseOptions(config: Config) {
  return {
    dataDir: config.dataDir,
    databaseUrl: config.databaseUrl,
    poolMax: poolSizes(config.pgPoolMax).reads,
    transactionPoolMax: poolSizes(config.pgPoolMax).changes,
    cacheMb: config.sqliteCacheMb,
    statementTimeoutMs: config.pgStatementTimeoutMs,
    connectTimeoutMs: config.pgConnectTimeoutMs,
  };
}

/**
 * The address of a server given no PUBLIC_URL: where it listens, as the machine itself reaches it
 * (an address of every interface is reached on the loopback one). The pages' cookie belongs to this
 * host, so the links printed and mailed and the README's examples all use it.
 */
export function localUrl(host: string, port: number): string {
  const reached = host === '0.0.0.0' || host === '::' || host === '[::]' ? '127.0.0.1' : host;
  return `http://${reached.includes(':') && !reached.startsWith('[') ? `[${reached}]` : reached}:${port}`;
}

/**
 * Whether an environment says where the server is: otherwise a command run beside it (without the
 * server's PORT, say) takes the address the server recorded when it started.
 */
export const addressGiven = (env: NodeJS.ProcessEnv): boolean => Boolean(env.PUBLIC_URL || env.PORT || env.HOST);

/**
 * Reads the configuration from an environment (process.env by default).
 * Throws ConfigError with a message naming the variable when a value is unusable. One line per
 * setting, so it is long: each setting is read and checked where it is listed.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env, overrides: Partial<Config> = {}): Config {
  const port = env.PORT !== undefined && env.PORT !== '' ? parsePort(env.PORT) : 3000;
  const host = env.HOST || '127.0.0.1';
  const dataDir = path.resolve(env.DATA_DIR || './data');
  const publicUrl = env.PUBLIC_URL ? parseUrl('PUBLIC_URL', env.PUBLIC_URL) : localUrl(host, port);
  const mailDomain = env.MAIL_DOMAIN ? parseDomain('MAIL_DOMAIN', env.MAIL_DOMAIN) : 'items.shiplog.localhost';
  const mailFrom = env.MAIL_FROM ? parseMailFrom(env.MAIL_FROM) : `Shiplog <shiplog@${mailDomain}>`;
  const logLevel = (env.LOG_LEVEL || 'info').toLowerCase() as LogLevel;
  if (!LOG_LEVELS.includes(logLevel)) {
    throw new ConfigError(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}, got "${env.LOG_LEVEL}".`);
  }
  const smtpUrl = env.SMTP_URL ? parseSmtpUrl(env.SMTP_URL) : undefined;
  const positive = (name: string, fallback: number, max?: number) =>
    env[name] ? parsePositive(name, env[name]!, max) : fallback;
  const limit = (name: string, fallback: number) =>
    env[name] ? parseLimit(name, env[name]!, 1_000_000_000) : fallback;
  const mailLeaseSeconds = positive('MAIL_LEASE_SECONDS', 120, 86_400);
  const mailSendTimeoutSeconds = positive('MAIL_SEND_TIMEOUT_SECONDS', 60, 3600);
  if (mailSendTimeoutSeconds >= mailLeaseSeconds) {
    throw new ConfigError(
      `MAIL_SEND_TIMEOUT_SECONDS (${mailSendTimeoutSeconds}) must be shorter than ` +
        `MAIL_LEASE_SECONDS (${mailLeaseSeconds}), so an attempt ends while its claim holds.`,
    );
  }
  const webhookTimeoutSeconds = positive('WEBHOOK_TIMEOUT_SECONDS', 10, 300);
  const webhookLeaseSeconds = positive('WEBHOOK_LEASE_SECONDS', 60, 3600);
  if (webhookTimeoutSeconds >= webhookLeaseSeconds) {
    throw new ConfigError(
      `WEBHOOK_TIMEOUT_SECONDS (${webhookTimeoutSeconds}) must be shorter than ` +
        `WEBHOOK_LEASE_SECONDS (${webhookLeaseSeconds}), so a delivery ends while its claim holds.`,
    );
  }
  return Object.freeze({
    port,
    host,
    dataDir,
    publicUrl,
    mailDomain,
    mailFrom,
    logLevel,
    smtpUrl,
    mailLeaseSeconds,
    mailSendTimeoutSeconds,
    mailProbeSeconds: positive('MAIL_PROBE_SECONDS', 15, 3600),
    mailStallSeconds: positive('MAIL_STALL_SECONDS', 300, 86_400),
    databaseUrl: env.DATABASE_URL ? parseDatabaseUrl(env.DATABASE_URL) : undefined,
    pgPoolMax: positive('PG_POOL_MAX', DEFAULT_PG_POOL_MAX),
    sqliteCacheMb: positive('SQLITE_CACHE_MB', 8, 4096),
    answerCacheMb: limit('ANSWER_CACHE_MB', 16),
    readsPerTurn: positive('READS_PER_TURN', 4, 10_000),
    pgStatementTimeoutMs: positive('PG_STATEMENT_TIMEOUT_MS', 5000),
    pgConnectTimeoutMs: positive('PG_CONNECT_TIMEOUT_MS', 5000),
    livePollMs: positive('LIVE_POLL_MS', 400, MAX_TIMER_MS),
    requestTimeoutMs: positive('REQUEST_TIMEOUT_MS', 30_000, MAX_TIMER_MS),
    keepAliveTimeoutMs: positive('KEEP_ALIVE_TIMEOUT_MS', 5_000, MAX_TIMER_MS),
    maxConnections: positive('MAX_CONNECTIONS', 1_000),
    drainDelayMs: env.DRAIN_DELAY_MS ? parseWhole('DRAIN_DELAY_MS', env.DRAIN_DELAY_MS, 600_000) : 2_000,
    drainTimeoutMs: positive('DRAIN_TIMEOUT_MS', 10_000, 600_000),
    webSessionIdleMinutes: positive('WEB_SESSION_IDLE_MINUTES', 7 * 24 * 60, 366 * 24 * 60),
    webSessionLifetimeDays: positive('WEB_SESSION_LIFETIME_DAYS', 30, 366),
    webhookTimeoutSeconds,
    webhookLeaseSeconds,
    webhookDisableAfterFailures: positive('WEBHOOK_DISABLE_AFTER_FAILURES', 20, 1000),
    webhooksAllowPrivate: parseFlag('WEBHOOKS_ALLOW_PRIVATE', env.WEBHOOKS_ALLOW_PRIVATE ?? ''),
    webhookRetentionDays: positive('WEBHOOK_RETENTION_DAYS', 30, 3650),
    metricsToken: env.METRICS_TOKEN ? parseMetricsToken(env.METRICS_TOKEN) : undefined,
    rateLimitPerKey: limit('RATE_LIMIT_PER_KEY', 1_200),
    rateLimitPerAddress: limit('RATE_LIMIT_PER_ADDRESS', 300),
    rateLimitWindowSeconds: positive('RATE_LIMIT_WINDOW_SECONDS', 60, 86_400),
    rateLimitStore: parseRateLimitStore(env.RATE_LIMIT_STORE, Boolean(env.DATABASE_URL)),
    maxAnswerBytes: positive('MAX_ANSWER_BYTES', 8_000_000, 1_000_000_000),
    // A file is held in memory whole while it is received and stored: 100 MiB at most.
    attachmentMaxMb: positive('ATTACHMENT_MAX_MB', 10, 100),
    attachmentsPerProductMb: positive('ATTACHMENTS_PER_PRODUCT_MB', 1024, 1_000_000),
    mailInboundPort: env.MAIL_INBOUND_PORT ? parsePort(env.MAIL_INBOUND_PORT, 'MAIL_INBOUND_PORT') : undefined,
    mailInboundHost: env.MAIL_INBOUND_HOST || '127.0.0.1',
    // A message is held in memory whole while it is read, as a file is.
    mailInboundMaxMb: positive('MAIL_INBOUND_MAX_MB', 25, 200),
    ...overrides,
  });
}
