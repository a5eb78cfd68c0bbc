/** What a member may write into the conversation around an item, bounded as descriptions are. */
export const LIMITS = { body: 65535, label: 255, action: 255 } as const;

/** Pages of comments (an item may gather thousands), favorites, blocks and annotations. */
export const CONVERSATION_PAGE = { default: 100, max: 500 } as const;

/** Totals of the lists before paging, as items.json gives its own. */
export const COMMENT_COUNT = 'X-Sprintly-Comment-Count';
export const FAVORITE_COUNT = 'X-Sprintly-Favorite-Count';
export const BLOCK_COUNT = 'X-Sprintly-Block-Count';
export const ANNOTATION_COUNT = 'X-Sprintly-Annotation-Count';

/** How a comment came in. */
export type CommentVia = 'api' | 'page' | 'mail';
