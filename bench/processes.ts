import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { ROOT, SERVER_NODE_OPTIONS, SERVER_START_ENV } from './config.js';
import { freePort } from '../test/processes.js';

export { freePort };

/** Every child the harness started and has not seen exit, so each can be stopped by its pid. */
const running = new Set<ChildProcess>();

const isRunning = (child: ChildProcess): boolean => child.exitCode === null && child.signalCode === null;

export interface Child {
  process: ChildProcess;
  pid: number;
  /** The last lines it wrote, for the error message when it fails. */
  output(): string;
}

/**
 * Spawns a node process with its output appended to `logFile` and kept (bounded) in memory.
 * `env` is the whole environment: nothing of the harness's leaks in unless passed.
 */
export function spawnNode(args: string[], env: NodeJS.ProcessEnv, logFile: string): Child {
  const child = spawn(process.execPath, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  if (!child.pid) throw new Error(`could not start node ${args.join(' ')}`);
  running.add(child);
  child.once('exit', () => running.delete(child));
  const log = fs.createWriteStream(logFile, { flags: 'a' });
  let tail = '';
  const keep = (chunk: Buffer) => {
    log.write(chunk);
    tail = (tail + chunk.toString('utf8')).slice(-4000);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  child.once('exit', () => log.end());
  return { process: child, pid: child.pid, output: () => tail };
}

/**
 * The server's `script` as `npm start` runs it (its Node options and environment), with `env`
 * over that environment and `options` (a profiler's) after the start's own.
 */
export function spawnServer(script: string, env: NodeJS.ProcessEnv, logFile: string, options: string[] = []): Child {
  return spawnNode([...SERVER_NODE_OPTIONS, ...options, script], { ...SERVER_START_ENV, ...env }, logFile);
}

/** SIGTERM by pid, SIGKILL after `graceMs`; resolves once the process is gone. */
export async function stopChild(child: Child | undefined, graceMs = 10_000): Promise<void> {
  if (!child || !isRunning(child.process)) return;
  const exited = once(child.process, 'exit');
  const kill = (signal: NodeJS.Signals) => {
    try {
      process.kill(child.pid, signal);
    } catch {
      // Already gone.
    }
  };
  kill('SIGTERM');
  const timer = setTimeout(() => kill('SIGKILL'), graceMs);
  await exited;
  clearTimeout(timer);
}

/** Stops every child still running, each by its own pid. */
export async function stopAllChildren(): Promise<void> {
  await Promise.all([...running].map((p) => stopChild({ process: p, pid: p.pid!, output: () => '' })));
}

/** Last resort when the harness itself is exiting: no time to wait, so SIGKILL each pid. */
export function killAllChildrenNow(): void {
  for (const p of running) {
    try {
      process.kill(p.pid!, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }
}

/**
 * Stops the children on Ctrl-C, SIGTERM or a crash of the harness, so no server is left behind
 * holding a port or a database.
 */
export function stopChildrenOnExit(): void {
  const onSignal = (signal: NodeJS.Signals) => {
    process.stderr.write(`\nbench: ${signal}, stopping child processes\n`);
    void stopAllChildren().finally(() => process.exit(signal === 'SIGINT' ? 130 : 143));
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  process.once('exit', killAllChildrenNow);
}

export interface HttpAnswer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** One HTTP request on a fresh connection; rejects on connection errors. */
export function request(
  port: number,
  path: string,
  options: { method?: string; headers?: Record<string, string>; body?: string; timeoutMs?: number } = {},
): Promise<HttpAnswer> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        path,
        method: options.method ?? 'GET',
        headers: options.headers,
        agent: false,
        timeout: options.timeoutMs ?? 30_000,
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (body += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`timeout on ${path}`)));
    req.on('error', reject);
    req.end(options.body);
  });
}

/**
 * Polls `path` every `everyMs` until it answers 200; throws if the child exits first or
 * `timeoutMs` passes. Returns the moment of the first 200 (ms, performance clock).
 */
export async function waitForOk(
  child: Child,
  port: number,
  path: string,
  timeoutMs = 120_000,
  everyMs = 5,
): Promise<number> {
  const deadline = performance.now() + timeoutMs;
  while (performance.now() < deadline) {
    if (!isRunning(child.process))
      throw new Error(`process ${child.pid} exited before answering ${path}:\n${child.output()}`);
    try {
      const res = await request(port, path, { timeoutMs: 5000 });
      if (res.status === 200) return performance.now();
    } catch {
      // Not listening yet.
    }
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
  throw new Error(`no 200 from ${path} within ${timeoutMs} ms:\n${child.output()}`);
}

function memoryField(pid: number, field: 'VmHWM' | 'VmRSS'): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const match = new RegExp(`^${field}:\\s+(\\d+)\\s+kB`, 'm').exec(status);
  if (!match) throw new Error(`no ${field} in /proc/${pid}/status`);
  return Number(match[1]) / 1024;
}

/** Peak resident set size (VmHWM) of a live process, in MiB. */
export const peakRssMb = (pid: number): number => memoryField(pid, 'VmHWM');

/** Resident set size now (VmRSS), in MiB. */
export const rssMb = (pid: number): number => memoryField(pid, 'VmRSS');

/** Waits until something accepts TCP connections on `port`; throws if the child exits first. */
export async function waitForPort(child: Child, port: number, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (!isRunning(child.process))
      throw new Error(`process ${child.pid} exited before listening on ${port}:\n${child.output()}`);
    const open = await new Promise<boolean>((resolve) => {
      const socket = net.connect({ port, host: '127.0.0.1' });
      socket.once('connect', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (open) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`nothing listened on ${port} within ${timeoutMs} ms:\n${child.output()}`);
}
