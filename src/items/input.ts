import type { FastifyRequest } from 'fastify';
import { itemNotFound, ValidationError } from '../errors.js';
import {
  asBoolean,
  asEnum,
  asEnumList,
  asInteger,
  asList,
  asReference,
  asString,
  asText,
  asTextBytes,
  collectErrors,
  digitsToId,
  invalid,
  type ParamValue,
} from '../http/params.js';
import {
  CLOSE_REASONS,
  DEFAULT_LIST_STATUSES,
  ENVIRONMENT_LENGTH,
  INPUT_STATUSES,
  ITEM_TYPES,
  LIMITS,
  MAX_CHILDREN_OFFSET,
  MAX_ENVIRONMENT_FILTER,
  MAX_LIST_OFFSET,
  MAX_TAG_FILTER,
  MAX_TAGS,
  ORDERS,
  SCORES,
  STATUSES,
  type CloseReason,
  type ItemType,
  type Order,
  type Status,
} from './model.js';

type Params = Record<string, ParamValue>;

/** A user reference (assigned_to, created_by): anything but a positive integer names no user. */
export type UserRef = { id: number } | { invalid: true } | null | undefined;

function userRef(name: string, raw: ParamValue): UserRef {
  const value = asReference(name, raw, 'id');
  if (value === undefined) return undefined;
  if (value === null) return null;
  const s = asString(name, value)!.trim();
  if (s === '') return null;
  // Digits name a user, or (too large to be an id) nobody: 404 either way, like any other value.
  const id = digitsToId(s);
  return id === undefined ? { invalid: true } : { id };
}

function tagList(value: ParamValue, max: number): string[] | undefined {
  const list = asList('tags', value);
  if (list === undefined) return undefined;
  for (const tag of list) {
    if ([...tag].length > LIMITS.tag)
      throw new ValidationError({ tags: `each tag must be at most ${LIMITS.tag} characters` });
  }
  const tags = [...new Set(list)];
  if (tags.length > max) throw new ValidationError({ tags: `at most ${max} tags` });
  return tags;
}

/** Environments of a `deployed_to` / `not_deployed_to` filter; an empty list is no filter. */
function environmentList(name: string, value: ParamValue): string[] | undefined {
  const list = asList(name, value);
  if (!list?.length) return undefined;
  if (list.some((environment) => [...environment].length > ENVIRONMENT_LENGTH))
    invalid(name, `each environment must be at most ${ENVIRONMENT_LENGTH} characters`);
  const environments = [...new Set(list)];
  if (environments.length > MAX_ENVIRONMENT_FILTER) invalid(name, `at most ${MAX_ENVIRONMENT_FILTER} environments`);
  return environments;
}

/** `parent`: a number, or null to detach (empty value or JSON null). */
function parentRef(raw: ParamValue): number | null | undefined {
  const value = asReference('parent', raw, 'number');
  if (value === null) return null;
  const s = asString('parent', value);
  if (s === undefined) return undefined;
  if (s.trim() === '') return null;
  return asInteger('parent', s);
}

function required(name: string, value: string | undefined): string | undefined {
  if (value === undefined || value.trim() === '') throw new ValidationError({ [name]: 'is required' });
  return value;
}

/** What an item list is filtered by, each filter read as items.json reads its parameter. */
export interface ListFilters {
  types?: ItemType[];
  /** Undefined: no status named (a list then shows DEFAULT_LIST_STATUSES). */
  statuses?: Status[];
  assignedTo: UserRef;
  createdBy: UserRef;
  tags?: string[];
  /** Only items deployed (and not reverted) to any of these environments. */
  deployedTo?: string[];
  /** Only items not deployed (or reverted) to any of these environments. */
  notDeployedTo?: string[];
  /** Only these items: what a search matched (the board's query, read by the search's own rules). */
  ids?: number[];
}

/**
 * A list of items as the service takes it: what items.json's query string says (parseListItems),
 * and what pages ask for directly (listQuery), so that both mean the same by each filter.
 */
export interface ListItemsInput extends ListFilters {
  statuses: Status[];
  offset: number;
  limit: number;
  order: Order;
  children: boolean;
}

/** The list items.json gives for no parameters: top-level items of the default statuses, by priority, 20. */
const LIST_DEFAULTS: ListItemsInput = {
  statuses: DEFAULT_LIST_STATUSES,
  offset: 0,
  limit: 20,
  order: 'priority',
  assignedTo: undefined,
  createdBy: undefined,
  children: false,
};

/** A list asked for in code (a page, a move to the top): what it names, items.json's defaults for the rest. */
export function listQuery(query: Partial<ListItemsInput>): ListItemsInput {
  const named = Object.entries(query).filter(([, value]) => value !== undefined);
  return { ...LIST_DEFAULTS, ...Object.fromEntries(named) };
}

/** A list's offset, within the bound of its kind (MAX_LIST_OFFSET, or MAX_CHILDREN_OFFSET with sub-items). */
function listOffset(value: ParamValue, children: boolean): number | undefined {
  const offset = asInteger('offset', value);
  const max = children ? MAX_CHILDREN_OFFSET : MAX_LIST_OFFSET;
  if (offset !== undefined && offset > max)
    invalid(
      'offset',
      `must be at most ${max}${children ? ' with children=true' : ''}; narrow the list with filters instead`,
    );
  return offset;
}

/** Each filter's parameter read once, shared by items.json's parser and the pages' (parseListFilters). */
const filterOf = {
  types: (p: Params) => asEnumList('type', p.type, ITEM_TYPES),
  statuses: (p: Params) => asEnumList('status', p.status, STATUSES),
  assignedTo: (p: Params) => userRef('assigned_to', p.assigned_to),
  createdBy: (p: Params) => userRef('created_by', p.created_by),
  tags: (p: Params) => tagList(p.tags, MAX_TAG_FILTER),
  deployedTo: (p: Params) => environmentList('deployed_to', p.deployed_to),
  notDeployedTo: (p: Params) => environmentList('not_deployed_to', p.not_deployed_to),
};

/** items.json's query string as a list (every bad parameter named in one 400, in this order). */
export function parseListItems(p: Params): ListItemsInput {
  return collectErrors((field) => {
    const limit = field(() => asInteger('limit', p.limit, 1)) ?? LIST_DEFAULTS.limit;
    const statuses = field(() => filterOf.statuses(p));
    const children = field(() => asBoolean('children', p.children)) ?? false;
    const offset = field(() => listOffset(p.offset, children)) ?? 0;
    return {
      types: field(() => filterOf.types(p)),
      statuses: statuses?.length ? statuses : DEFAULT_LIST_STATUSES,
      offset,
      limit: Math.min(limit, 500),
      order: field(() => asEnum('order_by', p.order_by, ORDERS)) ?? LIST_DEFAULTS.order,
      assignedTo: field(() => filterOf.assignedTo(p)),
      createdBy: field(() => filterOf.createdBy(p)),
      tags: field(() => filterOf.tags(p)),
      deployedTo: field(() => filterOf.deployedTo(p)),
      notDeployedTo: field(() => filterOf.notDeployedTo(p)),
      children,
    };
  });
}

/**
 * A list's filters from parameters named as items.json names them, each read by the same rule
 * (a page's own filter form names them its way, then asks with listQuery). Parameters not given
 * are no filter; a status named but empty is none either.
 */
export function parseListFilters(p: Params): ListFilters {
  return collectErrors((field) => {
    const statuses = field(() => filterOf.statuses(p));
    return {
      types: field(() => filterOf.types(p)),
      statuses: statuses?.length ? statuses : undefined,
      assignedTo: field(() => filterOf.assignedTo(p)),
      createdBy: field(() => filterOf.createdBy(p)),
      tags: field(() => filterOf.tags(p)),
      deployedTo: field(() => filterOf.deployedTo(p)),
      notDeployedTo: field(() => filterOf.notDeployedTo(p)),
    };
  });
}

/** A top-level list's `offset` as items.json reads it (at most MAX_LIST_OFFSET). */
export const parseListOffset = (value: ParamValue): number => listOffset(value, false) ?? 0;

export interface CreateItemInput {
  type: ItemType;
  title?: string;
  who?: string;
  what?: string;
  why?: string;
  description: string;
  /**
   * The description as HTML, rendered before the transaction (renderDescription); without it the
   * row waits for the fill.
   */
  descriptionHtml?: string;
  score: string;
  status: Status;
  closeReason?: CloseReason;
  assignedTo: UserRef;
  createdBy: UserRef;
  tags: string[];
  parent?: number | null;
}

export function parseCreateItem(p: Params): CreateItemInput {
  return collectErrors((field) => {
    const type = field(() => required('type', asString('type', p.type)) && asEnum('type', p.type, ITEM_TYPES));
    const story = type === 'story';
    const text = (name: 'title' | 'who' | 'what' | 'why', needed: boolean) =>
      field(() => {
        const v = asText(name, p[name], LIMITS[name]);
        return needed ? required(name, v) : v;
      });
    const input: CreateItemInput = {
      type: type as ItemType,
      title: story ? undefined : text('title', type !== undefined),
      who: story ? text('who', true) : undefined,
      what: story ? text('what', true) : undefined,
      why: story ? text('why', true) : undefined,
      description: field(() => asTextBytes('description', p.description, LIMITS.description)) ?? '',
      score: field(() => asEnum('score', p.score, SCORES)) ?? '~',
      status: field(() => asEnum('status', p.status, INPUT_STATUSES)) ?? 'backlog',
      closeReason: field(() => asEnum('close_reason', p.close_reason, CLOSE_REASONS)),
      assignedTo: field(() => userRef('assigned_to', p.assigned_to)),
      createdBy: field(() => userRef('created_by', p.created_by)),
      tags: field(() => tagList(p.tags, MAX_TAGS)) ?? [],
      parent: field(() => parentRef(p.parent)),
    };
    if (story && input.parent != null)
      field(() => {
        throw new ValidationError({ parent: 'a story cannot have a parent' });
      });
    return input;
  });
}

export interface UpdateItemInput {
  title?: string;
  who?: string;
  what?: string;
  why?: string;
  description?: string;
  /** As on CreateItemInput. */
  descriptionHtml?: string;
  score?: string;
  status?: Status;
  closeReason?: CloseReason;
  assignedTo: UserRef;
  tags?: string[];
  parent?: number | null;
}

/** Format checks only; the rules that depend on the item are the service's. */
export function parseUpdateItem(p: Params): UpdateItemInput {
  return collectErrors((field) => ({
    title: field(() => asText('title', p.title, LIMITS.title)),
    who: field(() => asText('who', p.who, LIMITS.who)),
    what: field(() => asText('what', p.what, LIMITS.what)),
    why: field(() => asText('why', p.why, LIMITS.why)),
    description: field(() => asTextBytes('description', p.description, LIMITS.description)),
    score: field(() => asEnum('score', p.score, SCORES)),
    status: field(() => asEnum('status', p.status, INPUT_STATUSES)),
    closeReason: field(() => asEnum('close_reason', p.close_reason, CLOSE_REASONS)),
    assignedTo: field(() => userRef('assigned_to', p.assigned_to)),
    tags: field(() => tagList(p.tags, MAX_TAGS)),
    parent: field(() => parentRef(p.parent)),
  }));
}

export interface ResortInput {
  before?: number;
  after?: number;
}

export function parseResort(p: Params): ResortInput {
  const input = collectErrors((field) => ({
    before: field(() => asInteger('before', p.before)),
    after: field(() => asInteger('after', p.after)),
  }));
  if (input.before === undefined && input.after === undefined) {
    throw new ValidationError(
      { before: 'give before, after, or both' },
      'Give before or after: the item to place this one below or above.',
    );
  }
  return input;
}

/** An If-Match header read: any version (`*`), or the strong entity tags it lists, unquoted. */
export type IfMatch = '*' | string[];

/** One element of an If-Match list: an entity tag, strong or weak (`W/`), or nothing (empty elements are allowed). */
const IF_MATCH_ELEMENT = /[ \t]*(?:(W\/)?"([\x21\x23-\x7e\x80-\uffff]*)")?[ \t]*(,|$)/y;

/**
 * If-Match (RFC 9110 §13.1.1): undefined when absent, so that clients that send none change items
 * as they always did. Weak tags are read but never match (If-Match compares strongly). Anything
 * but `*` or a list of quoted tags is a 400 naming the header, rather than a guess.
 */
export function parseIfMatch(header: string | string[] | undefined): IfMatch | undefined {
  if (header === undefined) return undefined;
  const value = Array.isArray(header) ? header.join(', ') : header;
  if (value.trim() === '*') return '*';
  const malformed = () =>
    invalid('If-Match', 'must be * or a list of quoted entity tags, as an ETag header gives them');
  const tags: string[] = [];
  let elements = 0;
  // Each element ends at a comma (consumed) or at the end (where the loop stops).
  for (let at = 0; ; ) {
    IF_MATCH_ELEMENT.lastIndex = at;
    const m = IF_MATCH_ELEMENT.exec(value) ?? malformed();
    if (m[2] !== undefined) {
      elements += 1;
      if (!m[1]) tags.push(m[2]);
    }
    at += m[0].length;
    if (m[3] === '') break;
  }
  if (elements === 0) malformed();
  return tags;
}

/** The item number of an `.../items/{item_number}...` path; anything but digits names no item (404). */
export function pathItemNumber(request: FastifyRequest): number {
  const raw = (request.params as { item_number: string }).item_number;
  const number = digitsToId(raw);
  if (number === undefined) throw itemNotFound(raw);
  return number;
}
