import { csrfField, type Viewer } from './layout.js';
import { html, type Html } from './html.js';

/** What a confirmation asks: the question, the form that does it, and where "Cancel" goes. */
export interface Confirmation {
  question: string;
  detail?: string;
  action: string;
  /** The button that does it, naming what it does ("Delete the webhook"). */
  label: string;
  cancel: string;
  viewer: Viewer;
}

/**
 * The step before something that cannot be undone: the same form posted again with `confirm=yes`.
 * A page of its own, so that it works without script; the button has the focus, Cancel is a link back.
 */
export function confirmPage(c: Confirmation): Html {
  return html`<section class="confirm" aria-labelledby="confirm-question">
<p id="confirm-question"><strong>${c.question}</strong></p>
${c.detail ? html`<p>${c.detail}</p>` : ''}
<form method="post" action="${c.action}">${csrfField(c.viewer)}<input type="hidden" name="confirm" value="yes">\
<button type="submit" class="danger" autofocus>${c.label}</button> <a href="${c.cancel}">Cancel</a></form>
</section>`;
}
