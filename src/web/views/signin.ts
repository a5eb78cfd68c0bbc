import { html, type Html } from './html.js';
import { fieldError, invalidAttrs, type FormState } from './parts.js';

/** The form that asks for a link, as sent back (what was typed, why not); `next`: the page to return to after. */
export function signInForm(form: FormState = { values: {}, errors: {} }, next?: string): Html {
  return html`${form.message ? html`<p class="error">${form.message}</p>` : ''}
<p>Enter your email address: we send you a link that signs you in.</p>
<form method="post" action="/app/sign-in">${next ? html`<input type="hidden" name="next" value="${next}">` : ''}
<p><label for="email">Email</label><input id="email" type="email" name="email" required maxlength="254" \
autocomplete="email" value="${form.values.email ?? ''}"${invalidAttrs(form, 'email')}>${fieldError(form, 'email')}</p>
<p><button type="submit">Send me a sign-in link</button></p>
</form>`;
}

/** The same answer whether or not the address has an account. */
export function linkSentPage(): Html {
  return html`<p class="notice">If that address belongs to a Shiplog account, a sign-in link is on its way to it.
The link works once, for 15 minutes.</p>
<p><a href="/app/sign-in">Ask for another link</a></p>`;
}

/** What following a link shows: a button, so that mail scanners fetching the link use nothing up. */
export function confirmSignInPage(): Html {
  return html`<p>Sign in to Shiplog in this browser.</p>
<form method="post"><p><button type="submit">Sign in</button></p></form>`;
}

export function linkRefusedPage(): Html {
  return html`<p class="error">This sign-in link has expired or has been used already.</p>
<p><a href="/app/sign-in">Ask for a new link</a></p>`;
}

export function signedOutPage(): Html {
  return html`<p>You are signed out.</p><p><a href="/app/sign-in">Sign in again</a></p>`;
}

export function signedOutEverywherePage(): Html {
  return html`<p>You are signed out everywhere: every browser that was signed in to Shiplog as you, this one \
included, has to sign in again.</p>
<p>Your API key still works; make a new one in the settings if it may have leaked.</p>\
<p><a href="/app/sign-in">Sign in again</a></p>`;
}

export function problemPage(message: string): Html {
  return html`<p class="error">${message}</p><p><a href="/app/">Back to Shiplog</a></p>`;
}
