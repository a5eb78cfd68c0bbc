import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/**
 * A small ext4 file system of the test's own, on a loop device under a fresh directory of /tmp,
 * for tests of a disk that fills up or stops taking writes under a running server. Mounting needs
 * root (CI runs as root): without it, or without loop devices, this throws saying so, and the
 * tests fail rather than skip.
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
    if (process.getuid?.() !== 0) {
      throw new Error(
        `the disk tests mount a file system of their own and must run as root (uid here: ${process.getuid?.()}); CI runs them as root`,
      );
    }
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
        `could not mount a ${sizeMiB} MiB ext4 file system for the disk tests (root and loop devices are needed): ${(err as Error).message}`,
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
