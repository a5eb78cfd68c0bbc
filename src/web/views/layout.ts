import { html, type Html } from './html.js';

/** Who is signed in, as the layout shows them: their address and the session's form token. */
export interface Viewer {
  email: string;
  csrfToken: string;
}

/** The hidden field every form of a session carries (checked on every POST). */
export const csrfField = (viewer: Viewer): Html => html`<input type="hidden" name="csrf" value="${viewer.csrfToken}">`;

/**
 * The search box of every signed-in page (`/` focuses it: forms.js): a plain GET of the results
 * page, which works without script. The results page has its own, with the query in it.
 */
const searchBox = html`<form class="search" role="search" method="get" action="/app/search">\
<label for="search-q" class="sr-only">Search items</label><input id="search-q" type="search" name="q" maxlength="500" \
placeholder="Search (press /)" aria-keyshortcuts="/"> <button type="submit" class="small">Search</button></form>`;

/**
 * The page around every page: the stylesheet, the navigation of a signed-in person and their search
 * box (`search: false` leaves it out, for the results page), the title.
 */
export function layout(title: string, body: Html, viewer?: Viewer, options: { search?: boolean } = {}): Html {
  const nav = viewer
    ? html`<nav aria-label="Shiplog"><a href="/app/products">Products</a> <a href="/docs">API docs</a></nav>
${options.search === false ? '' : searchBox}
<a href="/app/settings">${viewer.email}</a>
<form method="post" action="/app/sign-out">${csrfField(viewer)}\
<button class="link" type="submit">Sign out</button></form>`
    : '';
  return html`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title} \u00b7 Shiplog</title><link rel="stylesheet" href="/app/style.css">\
<script src="/app/forms.js" defer></script></head>
<body><header><a class="brand" href="/app/">Shiplog</a>${nav}</header>
<main><h1>${title}</h1>
${body}
</main></body></html>
`;
}
