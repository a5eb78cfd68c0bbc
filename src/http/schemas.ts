import { Type } from '@sinclair/typebox';
import { doc, documentAs } from './documentation.js';

// Path segments are read by hand (digits, else 404), so they validate as text and are documented as numbers.
const productId = doc.integer("The product's id.");
const itemNumber = doc.integer("The item's number within the product.");

export const ProductParams = documentAs(
  Type.Object({ product_id: Type.String() }),
  Type.Object({ product_id: productId }),
);
export const ItemParams = documentAs(
  Type.Object({ product_id: Type.String(), item_number: Type.String() }),
  Type.Object({ product_id: productId, item_number: itemNumber }),
);
export const WebhookParams = documentAs(
  Type.Object({ product_id: Type.String(), webhook_id: Type.String() }),
  Type.Object({ product_id: productId, webhook_id: doc.integer("The webhook's id.") }),
);
/** The token of a link sent by mail (an invitation, an unsubscribe link), signed by this installation. */
export const TokenParams = documentAs(
  Type.Object({ token: Type.String() }),
  Type.Object({ token: Type.String({ description: 'The signed token of the link, as mailed.' }) }),
);
