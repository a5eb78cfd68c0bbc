/**
 * The conversation around an item: comments (mailed to its followers, threaded), favorites,
 * blocks between items, and annotations left by tools; each item's `counts` show them.
 */
export { commentMessageRenderer, blockMessageRenderer } from './mail.js';
export { LIMITS as CONVERSATION_LIMITS } from './model.js';
export { CONVERSATION_SCHEMAS, presentBlocks, presentComments } from './present.js';
export { conversationRoutes } from './routes.js';
export { parseBlock, parseComment } from './input.js';
export {
  addBlock,
  addComment,
  addFavorite,
  blockersOfItems,
  blocksOfItem,
  commentsOfItem,
  findOwnFavorite,
  getComment,
  ownFavoriteOn,
  removeBlock,
  removeComment,
  removeFavorite,
  type Listed,
} from './service.js';
