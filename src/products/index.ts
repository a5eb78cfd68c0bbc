/**
 * Products: who belongs to which, and the product row every writer of a product locks first
 * (lockProduct), which is also where item numbers are allocated and list totals are versioned.
 */
export { requireMember, requireMemberDocumentation } from './hooks.js';
export { presentProductSummary, PRODUCT_SCHEMAS, ProductSummarySchema } from './present.js';
export {
  allocateItemNumber,
  markItemsChanged,
  filterMembers,
  findMembership,
  findProduct,
  insertMembership,
  listMembers,
  lockProduct,
} from './repository.js';
export { productMemberRoutes, productRoutes } from './routes.js';
export { addMemberByEmail, createProduct, productScope, requireAdmin } from './service.js';
