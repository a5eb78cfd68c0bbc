import crypto from 'node:crypto';

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
export const API_KEY_PATTERN = /^[A-Za-z0-9]{32}$/;

/** 32 letters and digits from the system CSPRNG, without modulo bias. */
export function generateApiKey(): string {
  let key = '';
  while (key.length < 32) {
    for (const byte of crypto.randomBytes(48)) {
      if (byte < 248 && key.length < 32) key += ALPHABET[byte % 62];
    }
  }
  return key;
}

/**
 * Keys carry ~190 bits of entropy, so a plain SHA-256 is enough to store them: nothing can be
 * guessed from the hash, and it can be looked up by index for Bearer tokens.
 */
export function hashApiKey(key: string): string {
  return crypto.createHash('sha256').update(key, 'utf8').digest('hex');
}

/** Constant-time comparison of a presented key with a stored hash. */
export function apiKeyMatches(key: string, storedHash: string): boolean {
  const a = Buffer.from(hashApiKey(key), 'hex');
  const b = Buffer.from(storedHash, 'hex');
  return a.length === b.length && crypto.timingSafeEqual(a, b);
}
