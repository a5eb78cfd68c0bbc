import { asInteger, asTextBytes, asText, collectErrors, invalid, type ParamValue } from '../http/params.js';

import { LIMITS } from './model.js';

/** Text that must be given and hold more than white space. */
function required(name: string, value: string | undefined): string {
  if (value === undefined) return invalid(name, 'is required');
  if (value.trim() === '') return invalid(name, 'must not be empty');
  return value;
}

/** `body` of a new comment: Markdown, bounded in bytes as a description is. */
export function parseComment(p: Record<string, ParamValue>): { body: string } {
  return { body: required('body', asTextBytes('body', p.body, LIMITS.body)) };
}

/** `blocked`: the number of the item of the same product that the item will block. */
export function parseBlock(p: Record<string, ParamValue>): { blocked: number } {
  const blocked = asInteger('blocked', p.blocked, 1);
  if (blocked === undefined) return invalid('blocked', 'is required: the number of the item this one blocks');
  return { blocked };
}

/** An annotation: a tool's `label` (shown as `verb`), what it did (`action`), and a `body`. */
export function parseAnnotation(p: Record<string, ParamValue>): { label: string; action: string; body: string } {
  return collectErrors((field) => ({
    label: field(() => required('label', asText('label', p.label, LIMITS.label)))!,
    action: field(() => required('action', asText('action', p.action, LIMITS.action)))!,
    body: field(() => asTextBytes('body', p.body, LIMITS.body)) ?? '',
  }));
}
