/** Items: numbered work in a product, its lists, order, followers and deploy history. */
export { ListCounts } from './counts.js';
export { parseCreateItem, parseListItems, parseUpdateItem, type ListItemsInput } from './input.js';
export { INPUT_STATUSES, ITEM_TYPES, SCORES, statusName, STATUSES as STATUS_NAMES, type Status } from './model.js';
export { BIG_PAGE, ITEM_SCHEMAS, ItemSchema, presentItems, rowsThatMayFit, type ItemJson } from './present.js';
export { deploymentsIn, findItemsByIds, findItemsByNumbers, knownDeploymentsOf, touchActivity, type Deployment } from './repository.js';
export { itemRoutes, shortUrlRoutes } from './routes.js';
export {
  childrenOf,
  childrenOfItem,
  createItem,
  deploymentsOf,
  deploymentsOfItem,
  followersOf,
  getItem,
  listItems,
  moveItem,
  resortItem,
  setFollowing,
  subItemCounts,
  unfollow,
  updateItem,
  type Move,
} from './service.js';
export { itemPagePath, itemShortUrl } from './urls.js';
