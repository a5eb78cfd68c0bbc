import type { FastifyInstance } from 'fastify';
import { ValidationError } from '../../errors.js';
import { params, Param, type ParamValue } from '../../http/params.js';
import { requestParams } from '../../http/request.js';
import {
  parseUpdateItem,
  renderDescription,
  STATUS_NAMES,
  updateItem,
  type Seen,
  type Status,
} from '../../items/index.js';
import { asText, checkToken, formErrors } from '../pages.js';
import { EDIT_FIELDS } from '../views/item.js';
import { itemHref } from '../views/parts.js';
import { ItemPath, lineBreaks, numberOf, redirectAfterPost } from './common.js';
import { renderItem } from './item.js';
import { ITEM_FORM_LIMIT } from './new-item.js';

/**
 * The edit form: its fields, each as it was shown (`seen_`) and, after a conflict, which value to
 * keep (`keep_`), and the version it was opened at.
 */
const editFields = params({
  csrf: Param,
  title: Param,
  who: Param,
  what: Param,
  why: Param,
  description: Param,
  status: Param,
  score: Param,
  tags: Param,
  assigned_to: Param,
  parent: Param,
  version: Param,
  ...Object.fromEntries(
    EDIT_FIELDS.flatMap((f) => [
      [`seen_${f}`, Param],
      [`keep_${f}`, Param],
    ]),
  ),
});

/**
 * The edit form's fields as the update reads them: an unchanged status the form cannot name
 * (someday) comes as none; textareas send CRLF.
 */
const editInput = (fields: Record<string, ParamValue>) =>
  parseUpdateItem({
    ...fields,
    status: fields.status || undefined,
    description: lineBreaks(fields.description),
    type: undefined,
  });

/** Fields whose value as shown is compared as the text it was, not parsed as input. */
const SEEN_AS_TEXT = ['title', 'who', 'what', 'why', 'description'] as const;

/** A field sent as it was shown (line breaks aside: browsers send them as CRLF). */
const sameValue = (sent: ParamValue, shown: ParamValue): boolean =>
  sent !== undefined &&
  JSON.stringify(typeof sent === 'string' ? lineBreaks(sent) : sent) ===
    JSON.stringify(typeof shown === 'string' ? lineBreaks(shown) : shown);

/** The values the form showed, read as the fields are (the texts as they came, whatever rules they predate). */
function seenValues(shown: Record<string, ParamValue>): Seen['fields'] {
  const status =
    typeof shown.status === 'string' && (STATUS_NAMES as readonly string[]).includes(shown.status)
      ? shown.status
      : undefined;
  // The texts as shown are compared, never stored: read as they came, whatever rules they predate.
  const texts = Object.fromEntries(
    SEEN_AS_TEXT.flatMap((f) => (typeof shown[f] === 'string' ? [[f, lineBreaks(shown[f])]] : [])),
  );
  const untexted = Object.fromEntries(SEEN_AS_TEXT.map((f) => [f, undefined]));
  try {
    const parsed = editInput({ ...shown, ...untexted, status: undefined });
    return { ...parsed, ...texts, status: status as Status | undefined };
  } catch (err) {
    if (err instanceof ValidationError)
      throw new ValidationError(
        {},
        'This form was not sent as the page made it: open the item again, and make your change there.',
      );
    throw err;
  }
}

/**
 * What the person saw when the form was opened: its version and the values its fields showed, read
 * as the fields are (a form without a version, from before forms carried one, saw nothing). A
 * field whose other value the person chose to keep after a conflict counts as left as shown.
 */
function seenByForm(p: Record<string, ParamValue>): { seen?: Seen; fields: Record<string, ParamValue> } {
  const fields: Record<string, ParamValue> = { ...p };
  if (typeof p.version !== 'string' || p.version === '') return { fields };
  const shown = Object.fromEntries(EDIT_FIELDS.map((f) => [f, p[`seen_${f}`]]));
  // Not sent on is not changed: whatever is stored stays, and is neither checked again nor
  // rendered again (a description stored before today's rules must not stop a title's change).
  for (const f of EDIT_FIELDS) if (p[`keep_${f}`] === 'theirs' || sameValue(p[f], shown[f])) fields[f] = undefined;
  return { fields, seen: { etags: [p.version], fields: seenValues(shown) } };
}

/**
 * The edit form's save. It sends every field with the values it showed: updateItem saves those the
 * person changed, and names those somebody else changed meanwhile, shown again to choose from.
 */
export async function itemEditRoutes(app: FastifyInstance): Promise<void> {
  const options = { bodyLimit: ITEM_FORM_LIMIT, schema: { ...ItemPath, body: editFields } };
  app.post('/items/:item_number', options, async (request, reply) => {
    checkToken(request);
    const number = numberOf(request);
    const p = requestParams(request);
    const scope = request.scope;
    let conflicts: string[];
    try {
      const { seen, fields } = seenByForm(p);
      const input = await renderDescription(app.markdown, editInput(fields));
      ({ conflicts } = await app.db
        .transaction()
        .execute((trx) => updateItem(trx, scope, number, input, app.config, seen)));
    } catch (err) {
      const shown = formErrors(err);
      if (!shown) throw err;
      const seen = Object.fromEntries(EDIT_FIELDS.map((f) => [f, asText(p)[`seen_${f}`] ?? '']));
      const edit = { refused: { values: asText(p), ...shown }, seen, version: asText(p).version ?? '' };
      return renderItem(app, { request, reply, number, status: 400, forms: { edit } });
    }
    if (conflicts.length)
      return renderItem(app, { request, reply, number, status: 409, forms: { edit: { conflicts, typed: asText(p) } } });
    return redirectAfterPost(reply, `${itemHref(scope.product.id, number)}?done=saved`);
  });
}
