import { ValidationError } from '../errors.js';
import { asText, type ParamValue } from '../http/params.js';

export function parseProductName(p: Record<string, ParamValue>): string {
  const name = asText('name', p.name, 255);
  if (name === undefined || name.trim() === '') throw new ValidationError({ name: 'is required' });
  return name;
}
