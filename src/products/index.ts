/**
 * Products: who belongs to which, and the product row every writer of a product locks first
 * (lockProduct), which is also where item numbers are allocated and list totals are versioned.
 */
export { requireMember, requireMemberDocumentation } from './hooks.js';
export { presentProductSummary, PRODUCT_SCHEMAS, ProductSummarySchema } from './present.js';
export { parseProductName } from './input.js';
export { productMemberRoutes, productRoutes } from './routes.js';
export {
  addMember,
  ChangedItems,
  addMemberByEmail,
  allocateItemNumber,
  createProduct,
  filterMembers,
  findMembership,
  findProduct,
  listMembers,
  lockProduct,
  markItemsChanged,
  itemsChangedSince,
  productRevisions,
  productScope,
  requireAdmin,
} from './service.js';
