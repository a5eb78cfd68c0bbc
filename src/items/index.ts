/** Items: numbered work in a product, its lists, order, followers and deploy history. */
export { ListCounts, ListPages, ListWindows } from './counts.js';
export { itemPieces, KeptItems, type ItemStamp } from './kept-items.js';
export {
  listQuery,
  parseCreateItem,
  parseListFilters,
  parseListItems,
  parseListOffset,
  parseUpdateItem,
  pathItemNumber,
  type ListFilters,
  type ListItemsInput,
} from './input.js';
export {
  entityTag,
  INPUT_STATUSES,
  ITEM_TYPES,
  SCORES,
  statusCode,
  statusName,
  STATUSES as STATUS_NAMES,
  type Status,
} from './model.js';
export { BIG_PAGE, ITEM_SCHEMAS, ItemSchema, presentItems, type ItemJson } from './present.js';
export { itemRoutes, shortUrlRoutes } from './routes.js';
export {
  addItemFollowers,
  archiveItem,
  changeItemCounts,
  followerIdsOf,
  childrenOf,
  childrenOfItem,
  createItem,
  deploymentsIn,
  deploymentsOf,
  deploymentsOfItem,
  descriptionHtmlOf,
  fillDescriptionHtml,
  findItemHeadsByIds,
  findItemHeadsByNumbers,
  findItemsByIds,
  findItemsByNumbers,
  followersOf,
  getItem,
  knownDeploymentsOf,
  listItems,
  moveItem,
  renderDescription,
  resortItem,
  setFollowing,
  subItemCounts,
  subItemsOf,
  assignedSubItems,
  touchActivity,
  unfollow,
  updateItem,
  type Deployment,
  type Edited,
  type ItemHead,
  type Move,
  type Seen,
} from './service.js';
export { itemSummary } from './events.js';
export { itemPagePath, itemShortUrl } from './urls.js';
