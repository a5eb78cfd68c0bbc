/**
 * Bytes to be kept for long (a cache's entry), in memory of their own.
 *
 * Node cuts every Buffer under 4 KiB (`Buffer.from` of a short string, `Buffer.concat` of a short
 * result) out of a shared 8 KiB slab, and the slab is freed only once no piece of it is referenced.
 * The other pieces of a slab are mostly the request's garbage, so one kept item's JSON of 1.5 KiB
 * held its whole slab: a cache weighed in bytes held several times its weight in memory. A Buffer
 * that already owns its memory is returned as it is; one cut from a slab is copied out of it.
 */
export function keptBytes(from: string | Buffer): Buffer {
  const bytes = typeof from === 'string' ? Buffer.from(from) : from;
  if (bytes.byteOffset === 0 && bytes.buffer.byteLength === bytes.length) return bytes;
  const own = Buffer.allocUnsafeSlow(bytes.length);
  bytes.copy(own);
  return own;
}
