/**
 * The one reading of the Accept header, for every answer that comes as HTML or as JSON (pages,
 * links in mail, short URLs).
 */

/**
 * How much an Accept header wants a media type: the q of the most specific range that matches it
 * (the type itself, else its type's wildcard, else `*\/*`), 0 when none does. A missing header
 * accepts everything equally.
 */
function acceptQuality(accept: string | undefined, type: string): number {
  if (!accept) return 1;
  let best: { rank: number; q: number } = { rank: -1, q: 0 };
  for (const part of accept.split(',')) {
    const [range, ...parameters] = part.split(';').map((s) => s.trim().toLowerCase());
    const rank = range === type ? 2 : range === `${type.split('/')[0]}/*` ? 1 : range === '*/*' ? 0 : -1;
    if (rank <= best.rank) continue;
    const q = Number(/^q=([0-9.]+)$/.exec(parameters.find((p) => p.startsWith('q=')) ?? 'q=1')?.[1] ?? 1);
    best = { rank, q: Number.isFinite(q) ? q : 0 };
  }
  return best.q;
}

/**
 * Which of `offers` (media types, the answer's own preference first) the client wants most. A tie,
 * `*\/*` alone as curl sends it, or no header at all, goes to the first offer: a client has to ask
 * for the other by name, above the first.
 */
export function preferredType<T extends string>(accept: string | undefined, offers: readonly [T, ...T[]]): T {
  let chosen = offers[0];
  let quality = acceptQuality(accept, chosen);
  for (const offer of offers.slice(1)) {
    const q = acceptQuality(accept, offer);
    if (q > quality) [chosen, quality] = [offer, q];
  }
  return chosen;
}

/** An answer that is JSON unless a browser asks for HTML above JSON (a link followed from a message). */
export const prefersHtml = (accept: string | undefined): boolean =>
  preferredType(accept, ['application/json', 'text/html']) === 'text/html';

/** A page, unless a script asks for JSON above HTML (the board's, which shows the answer itself). */
export const prefersJson = (accept: string | undefined): boolean =>
  preferredType(accept, ['text/html', 'application/json']) === 'application/json';
