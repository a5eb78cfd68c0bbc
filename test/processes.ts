import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { main as cliMain } from '../src/cli.js';
import { ROOT } from './root.js';
import { storageEnv } from './storage.js';

const SERVER = path.join(ROOT, 'dist', 'bundle', 'server.js');

/** Every setting Shiplog reads from its environment. */
const SHIPLOG_SETTINGS = [
  'PORT',
  'HOST',
  'DATA_DIR',
  'PUBLIC_URL',
  'MAIL_DOMAIN',
  'MAIL_FROM',
  'LOG_LEVEL',
  'SMTP_URL',
  'MAIL_LEASE_SECONDS',
  'MAIL_SEND_TIMEOUT_SECONDS',
  'MAIL_PROBE_SECONDS',
  'MAIL_STALL_SECONDS',
  'DATABASE_URL',
  'PG_POOL_MAX',
  'PG_STATEMENT_TIMEOUT_MS',
  'PG_CONNECT_TIMEOUT_MS',
  'LIVE_POLL_MS',
  'REQUEST_TIMEOUT_MS',
  'KEEP_ALIVE_TIMEOUT_MS',
  'MAX_CONNECTIONS',
  'DRAIN_DELAY_MS',
  'DRAIN_TIMEOUT_MS',
  'WEB_SESSION_IDLE_MINUTES',
  'WEB_SESSION_LIFETIME_DAYS',
  'WEBHOOK_TIMEOUT_SECONDS',
  'WEBHOOK_LEASE_SECONDS',
  'WEBHOOK_DISABLE_AFTER_FAILURES',
  'WEBHOOKS_ALLOW_PRIVATE',
  'WEBHOOK_RETENTION_DAYS',
  'SHIPLOG_URL',
  'SHIPLOG_API_KEY',
  'SHIPLOG_EMAIL',
  'SHIPLOG_ITEM_PATTERN',
  'RATE_LIMIT_PER_KEY',
  'RATE_LIMIT_PER_ADDRESS',
  'RATE_LIMIT_WINDOW_SECONDS',
  'RATE_LIMIT_STORE',
  'MAX_ANSWER_BYTES',
  'ANSWER_CACHE_MB',
  'READS_PER_TURN',
];

/** The caller's environment without any Shiplog setting, so only what a test passes counts. */
export function cleanEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const name of SHIPLOG_SETTINGS) delete env[name];
  return { ...env, ...extra };
}

/** A port nothing listens on at the moment of asking. */
export async function freePort(): Promise<number> {
  const probe = net.createServer();
  probe.listen(0, '127.0.0.1');
  await once(probe, 'listening');
  const { port } = probe.address() as net.AddressInfo;
  probe.close();
  await once(probe, 'close');
  return port;
}

export function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ port, host: '127.0.0.1' });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** Polls `check` every 25 ms until it holds; fails with `what` after `ms`. */
export async function waitFor(what: string, check: () => boolean | Promise<boolean>, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`timed out after ${ms} ms waiting for ${what}`);
}

export interface ServerOptions {
  /** Shiplog settings on top of HOST, PORT and DATA_DIR; nothing is inherited from the caller. */
  env?: Record<string, string>;
  /** Settings that name the port the server is given (such as PUBLIC_URL). */
  envForPort?: (port: number) => Record<string, string>;
  dataDir: string;
  /** Defaults to the system temporary directory, so nothing the server resolves lands in the checkout. */
  cwd?: string;
  /** stdin is never used; an ignored stream reads back as ''. */
  stdio?: ['ignore', 'pipe' | 'ignore', 'pipe' | 'ignore'];
}

export interface Server {
  child: ChildProcess;
  port: number;
  dataDir: string;
  stdout(): string;
  stderr(): string;
  /** Resolves with the exit code (or signal name) once the process is gone. */
  exited: Promise<number | string>;
}

const running = new Set<ChildProcess>();

function isRunning(child: ChildProcess): boolean {
  return child.exitCode === null && child.signalCode === null;
}

/** Spawns the built server on a free port without waiting for it, for tests of a start that must fail. */
export async function spawnServer({
  env = {},
  envForPort,
  dataDir,
  cwd = os.tmpdir(),
  stdio = ['ignore', 'pipe', 'pipe'],
}: ServerOptions): Promise<Server> {
  const port = await freePort();
  const child = spawn(process.execPath, [SERVER], {
    cwd,
    env: cleanEnv({
      HOST: '127.0.0.1',
      PORT: String(port),
      ...(await storageEnv(dataDir)),
      // No balancer watches a test's server: SIGTERM closes the listener at once unless a test asks.
      DRAIN_DELAY_MS: '0',
      ...env,
      ...envForPort?.(port),
    }),
    stdio,
  });
  running.add(child);
  let out = '';
  let err = '';
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (err += chunk));
  const exited = new Promise<number | string>((resolve) =>
    child.once('exit', (code, signal) => {
      running.delete(child);
      resolve(code ?? signal ?? 'unknown');
    }),
  );
  return { child, port, dataDir, stdout: () => out, stderr: () => err, exited };
}

/**
 * Starts the server and waits (at most ~10 s) until it accepts connections; fails early if it
 * exits. The port was free when asked for, but another process (test files run side by side) may
 * take it before the server listens: then the server is started again on another.
 */
export async function startServer(options: ServerOptions): Promise<Server> {
  for (let attempt = 1; ; attempt++) {
    const server = await spawnServer(options);
    const { child, port } = server;
    try {
      await waitFor(`the server to listen on ${port}`, async () => {
        if (!isRunning(child)) throw new Error(`server exited early (${child.exitCode ?? child.signalCode})`);
        return canConnect(port);
      });
      return server;
    } catch (error) {
      if (attempt < 3 && server.stderr().includes('EADDRINUSE')) continue;
      throw new Error(`${(error as Error).message}; stderr: ${server.stderr()}`);
    }
  }
}

/** SIGTERM by pid, SIGKILL if it lingers; resolves once the process is gone. */
export async function stopProcess(child: ChildProcess): Promise<void> {
  if (!child.pid || !isRunning(child)) return;
  const exited = once(child, 'exit');
  const kill = (signal: NodeJS.Signals) => {
    try {
      process.kill(child.pid!, signal);
    } catch {
      // Already gone.
    }
  };
  kill('SIGTERM');
  const timer = setTimeout(() => kill('SIGKILL'), 5_000);
  await exited;
  clearTimeout(timer);
}

/** Stops every server started here that is still running, including one whose start failed. */
export async function stopAll(): Promise<void> {
  await Promise.all([...running].map(stopProcess));
}

const CLI = path.join(ROOT, 'bin', 'shiplog.js');

export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs the admin command line with only the given settings (plus the storage of `dataDir` when
 * given); a hung run is killed rather than stalling the suite.
 */
export async function runCli(
  args: string[],
  options: { dataDir?: string; env?: Record<string, string>; cwd?: string; timeoutMs?: number; input?: Buffer } = {},
): Promise<CliRun> {
  const env = cleanEnv({ ...(options.dataDir ? await storageEnv(options.dataDir) : {}), ...options.env });
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      cwd: options.cwd ?? options.dataDir ?? os.tmpdir(),
      env,
      stdio: [options.input ? 'pipe' : 'ignore', 'pipe', 'pipe'],
      timeout: options.timeoutMs ?? 20_000,
    });
    // Standard input, for a command that reads it (a pipe transport's `shiplog mail receive`).
    if (options.input) child.stdin!.on('error', () => undefined).end(options.input);
    let stdout = '';
    let stderr = '';
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** A stream that keeps what is written to it, as text. */
function collected(): { stream: Writable; text(): string } {
  const chunks: Buffer[] = [];
  const stream = new Writable({
    write(chunk: Buffer | string, _encoding, done) {
      chunks.push(Buffer.from(chunk));
      done();
    },
  });
  return { stream, text: () => Buffer.concat(chunks).toString('utf8') };
}

/**
 * The command line's own code (`main` of src/cli.ts) run in this process, with the same settings
 * runCli would give it and its output kept: what a run does and answers, without a process to
 * start and a bundle to load for each. runCli runs the installed command itself.
 */
export async function runCliHere(args: string[], options: { dataDir?: string; env?: Record<string, string> } = {}) {
  const env = cleanEnv({ ...(options.dataDir ? await storageEnv(options.dataDir) : {}), ...options.env });
  const out = collected();
  const err = collected();
  const code = await cliMain(args, { out: out.stream, err: err.stream, env });
  return { code, stdout: out.text(), stderr: err.text() } satisfies CliRun;
}
