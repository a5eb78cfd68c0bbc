import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** Why a file system of the tests' own cannot be mounted here, or undefined when it can. */
function cannotMount(): string | undefined {
  const uid = process.getuid?.();
  if (uid !== 0) return `mounts a file system of its own, which needs root (running as uid ${uid})`;
  if (!fs.existsSync('/dev/loop-control')) return 'mounts a file system of its own on a loop device, and none is here';
  return undefined;
}

/**
 * node:test's `skip` for a test that mounts a SmallDisk: why it cannot run here (not root, no loop
 * devices), or false. A contributor's laptop skips such tests, saying why; with
 * SHIPLOG_REQUIRE_ROOT_TESTS=1 (set by .ci/run, which runs as root) they are never skipped, and
 * fail where they cannot run.
 */
export function diskTestSkip(): string | false {
  if (process.env.SHIPLOG_REQUIRE_ROOT_TESTS === '1') return false;
  return cannotMount() ?? false;
}

/**
 * A small ext4 file system of the test's own, on a loop device under a fresh directory of /tmp,
 * for tests of a disk that fills up or stops taking writes under a running server. Mounting needs
 * root and loop devices: without them this throws saying so (tests skip before, see diskTestSkip).
 */
export class SmallDisk {
  private readonly filler: string;

  private constructor(
    readonly dir: string,
    private readonly image: string,
  ) {
    this.filler = path.join(dir, 'filler');
  }

  static mount(sizeMiB: number): SmallDisk {
    const reason = cannotMount();
    if (reason) throw new Error(`this disk test ${reason}; SHIPLOG_REQUIRE_ROOT_TESTS=1 asks for it to run`);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'shiplog-disk-'));
    const image = `${dir}.img`;
    try {
      fs.writeFileSync(image, '');
      fs.truncateSync(image, sizeMiB * 1024 * 1024);
      // No blocks kept for root: the server runs as root here, and must meet the same full disk.
      run('mkfs.ext4', ['-q', '-F', '-m', '0', image]);
      run('mount', ['-o', 'loop', image, dir]);
    } catch (err) {
      fs.rmSync(image, { force: true });
      fs.rmSync(dir, { recursive: true, force: true });
      throw new Error(
        `could not mount a ${sizeMiB} MiB ext4 file system for the disk tests ` +
          `(root and loop devices are needed): ${(err as Error).message}`,
      );
    }
    return new SmallDisk(dir, image);
  }

  /** Bytes the file system has left for files. */
  freeBytes(): number {
    const { bavail, bsize } = fs.statfsSync(this.dir);
    return bavail * bsize;
  }

  /**
   * Writes a filler file until the file system refuses even one more byte, and again after each
   * flush (ext4 hands back blocks it had set aside for unwritten data); returns its size.
   */
  fill(): number {
    const fd = fs.openSync(this.filler, 'a');
    const block = Buffer.alloc(1024 * 1024, 0x2e);
    try {
      for (;;) {
        let added = 0;
        for (const size of [block.length, 65_536, 4096, 512, 1]) {
          for (;;) {
            try {
              added += fs.writeSync(fd, block, 0, size);
            } catch (err) {
              if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err;
              break;
            }
          }
        }
        try {
          fs.fsyncSync(fd);
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err;
        }
        if (added === 0) break;
      }
    } finally {
      fs.closeSync(fd);
    }
    return fs.statSync(this.filler).size;
  }

  /** Removes the filler: the space is free again. */
  empty(): void {
    fs.rmSync(this.filler, { force: true });
  }

  /**
   * Makes files refuse every write, on the descriptors the server holds open as well: what a file
   * system gone read-only under a running process does. (`mount -o remount,ro` itself is refused
   * while a process holds a file open for writing, as a database server always does.)
   */
  refuseWrites(files: string[], refuse: boolean): void {
    const existing = files.filter((f) => fs.existsSync(f));
    if (existing.length) run('chattr', [refuse ? '+i' : '-i', ...existing]);
  }

  /** Unmounts (lazily if it is still busy) and removes the image; never leaves a mount behind. */
  unmount(): void {
    try {
      run('umount', [this.dir]);
    } catch {
      run('umount', ['-l', this.dir]);
    }
    fs.rmSync(this.dir, { recursive: true, force: true });
    fs.rmSync(this.image, { force: true });
  }
}

function run(command: string, args: string[]): void {
  try {
    execFileSync(command, args, { stdio: ['ignore', 'pipe', 'pipe'], timeout: 30_000 });
  } catch (err) {
    const stderr = String((err as { stderr?: Buffer }).stderr ?? '').trim();
    throw new Error(`${command} ${args.join(' ')} failed: ${stderr || (err as Error).message}`);
  }
}
