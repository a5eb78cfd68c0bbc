import { asInteger, collectErrors, invalid, type ParamValue } from '../http/params.js';
import { ACTIVITY_PAGE, MAX_ACTIVITY_OFFSET } from './model.js';

/**
 * `offset` and `limit` of a page of activities: no limit is the default page, a bigger one than
 * the maximum is cut to it, below 1 is 400, and so is an offset past MAX_ACTIVITY_OFFSET; both
 * named in one 400.
 */
export function parseActivityPage(p: Record<string, ParamValue>): { offset: number; limit: number } {
  return collectErrors((field) => ({
    offset:
      field(() => {
        const offset = asInteger('offset', p.offset);
        if (offset !== undefined && offset > MAX_ACTIVITY_OFFSET)
          invalid('offset', `must be at most ${MAX_ACTIVITY_OFFSET}; older activities are not paged to`);
        return offset;
      }) ?? 0,
    limit: Math.min(field(() => asInteger('limit', p.limit, 1)) ?? ACTIVITY_PAGE.default, ACTIVITY_PAGE.max),
  }));
}
