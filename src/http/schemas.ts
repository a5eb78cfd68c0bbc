import { Type } from '@sinclair/typebox';

export const ProductParams = Type.Object({ product_id: Type.String() });
export const ItemParams = Type.Object({ product_id: Type.String(), item_number: Type.String() });
