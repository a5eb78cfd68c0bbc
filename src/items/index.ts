/** Items: numbered work in a product, its lists, order, followers and deploy history. */
export { ListCounts } from './counts.js';
export { statusName, STATUSES as STATUS_NAMES } from './model.js';
export { BIG_PAGE, ItemSchema, presentItems, type ItemJson } from './present.js';
export { findItemsByIds, findItemsByNumbers, touchActivity } from './repository.js';
export { itemRoutes, shortUrlRoutes } from './routes.js';
export { unfollow } from './service.js';
export { itemShortUrl } from './urls.js';
