/** Items: numbered work in a product, its lists, order, followers and deploy history. */
export { ListCounts } from './counts.js';
export {
  listQuery,
  parseCreateItem,
  parseListFilters,
  parseListItems,
  parseListOffset,
  parseUpdateItem,
  type ListFilters,
  type ListItemsInput,
} from './input.js';
export {
  entityTag,
  INPUT_STATUSES,
  ITEM_TYPES,
  SCORES,
  statusName,
  STATUSES as STATUS_NAMES,
  type Status,
} from './model.js';
export { BIG_PAGE, ITEM_SCHEMAS, ItemSchema, presentItems, rowsThatMayFit, type ItemJson } from './present.js';
export {
  deploymentsIn,
  findItemHeadsByIds,
  findItemHeadsByNumbers,
  findItemsByIds,
  findItemsByNumbers,
  knownDeploymentsOf,
  touchActivity,
  type Deployment,
  type ItemHead,
} from './repository.js';
export { itemRoutes, shortUrlRoutes } from './routes.js';
export {
  childrenOf,
  childrenOfItem,
  createItem,
  deploymentsOf,
  deploymentsOfItem,
  descriptionHtmlOf,
  fillDescriptionHtml,
  followersOf,
  getItem,
  listItems,
  moveItem,
  renderDescription,
  resortItem,
  setFollowing,
  subItemCounts,
  unfollow,
  updateItem,
  type Edited,
  type Move,
  type Seen,
} from './service.js';
export { itemSummary } from './events.js';
export { itemPagePath, itemShortUrl } from './urls.js';
