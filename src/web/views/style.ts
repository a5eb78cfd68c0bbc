/** The one stylesheet of the pages, served by Shiplog itself (`/app/style.css`). */
export const STYLESHEET = `
:root { color-scheme: light dark; --bg: #f6f7f9; --surface: #fff; --surface-2: #eceef1; --fg: #1d2327; \
--muted: #50575e; --border: #dcdcde; --border-strong: #8c8f94; --accent: #0b5cad; --on-accent: #fff; --focus: #0b5cad; \
--header-bg: #1d2327; --header-fg: #fff; --notice-bg: #e7f1fb; --notice-border: #b6d4f2; --error-bg: #fbeaea; \
--error-border: #e6b3b3; --danger: #b32d2e; --blocked-fg: #8a1f11; --star-bg: #fff6d6; --star-border: #b8860b; \
--warning: #8a5a00; \
--radius: 4px; --space-1: .25rem; --space-2: .5rem; --space-3: .75rem; --space-4: 1rem; --space-6: 1.5rem; \
--text-h1: 1.75rem; --text-h2: 1.3rem; --text-h3: 1.1rem; --text-small: .875rem; }
@media (prefers-color-scheme: dark) { :root { --bg: #15181c; --surface: #1e2227; --surface-2: #272c32; --fg: #e4e7eb; \
--muted: #a8b0b9; --border: #3a4048; --border-strong: #7d858f; --accent: #7ab8f5; --on-accent: #0d1117; \
--focus: #9ccbff; --header-bg: #0c0e11; --header-fg: #f2f4f6; --notice-bg: #15304d; --notice-border: #2f5f8f; \
--error-bg: #3d1a1a; --error-border: #824040; --danger: #f2948b; --blocked-fg: #ffc0b8; --star-bg: #3b3216; \
--star-border: #d9ae3a; --warning: #e0b354; } }
*, *::before, *::after { box-sizing: border-box; }
html { -webkit-text-size-adjust: 100%; }
body { margin: 0; font: 16px/1.5 -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; color: var(--fg); \
background: var(--bg); }
a { color: var(--accent); }
header { display: flex; flex-wrap: wrap; align-items: center; gap: var(--space-2) var(--space-4); padding: .6rem \
var(--space-4); background: var(--header-bg); color: var(--header-fg); }
header a { color: var(--header-fg); text-decoration: none; }
header .brand { font-weight: 700; margin-right: auto; }
header form { margin: 0; }
main { max-width: 52rem; margin: 0 auto; padding: var(--space-4); }
h1 { font-size: var(--text-h1); line-height: 1.25; margin: var(--space-2) 0 var(--space-4); }
h2 { font-size: var(--text-h2); line-height: 1.3; }
h3 { font-size: var(--text-h3); }
label { display: block; font-weight: 600; margin-bottom: var(--space-1); }
input[type=email], input[type=text] { width: 100%; max-width: 28rem; padding: var(--space-2); font: inherit; \
border: 1px solid var(--border-strong); border-radius: var(--radius); }
button { font: inherit; padding: .45rem var(--space-4); border: 1px solid var(--accent); border-radius: \
var(--radius); background: var(--accent); color: var(--on-accent); cursor: pointer; }
button.link { background: none; border: none; color: inherit; padding: 0; text-decoration: underline; }
.notice { padding: var(--space-3) var(--space-4); border-radius: var(--radius); background: var(--notice-bg); \
border: 1px solid var(--notice-border); color: var(--fg); }
.error { padding: var(--space-3) var(--space-4); border-radius: var(--radius); background: var(--error-bg); \
border: 1px solid var(--error-border); color: var(--fg); }
code.key { display: inline-block; padding: .3rem var(--space-2); font-size: 1.1rem; background: var(--surface); \
border: 1px solid var(--border); word-break: break-all; }
ul.products { list-style: none; padding: 0; margin: 0; }
ul.products li { background: var(--surface); border: 1px solid var(--border); border-radius: var(--radius); \
padding: var(--space-3) var(--space-4); margin-bottom: var(--space-3); }
ul.products .name { font-weight: 600; }
ul.counts { display: flex; flex-wrap: wrap; gap: var(--space-1) var(--space-3); list-style: none; padding: 0; \
margin: var(--space-1) 0 0; font-size: .9rem; color: var(--muted); }
.muted { color: var(--muted); font-size: .9rem; }
nav.product { display: flex; flex-wrap: wrap; gap: var(--space-1) var(--space-4); margin-bottom: var(--space-4); }
nav.product a[aria-current] { font-weight: 700; text-decoration: none; color: inherit; }
form.filters { display: flex; flex-wrap: wrap; align-items: flex-end; gap: var(--space-2) var(--space-4); \
margin-bottom: var(--space-4); }
form.filters label { font-weight: 400; margin: 0; }
form.filters label.check { align-self: center; }
select, textarea { font: inherit; padding: .4rem; border: 1px solid var(--border-strong); border-radius: \
var(--radius); max-width: 100%; }
textarea { width: 100%; }
.board { display: flex; gap: .75rem; overflow-x: auto; width: calc(100vw - 2rem); margin-left: calc(50% - 50vw + \
1rem); padding-bottom: .5rem; }
.column { flex: 0 0 17rem; background: var(--surface-2); border-radius: var(--radius); padding: .5rem; }
.column h2 { font-size: 1rem; margin: 0 0 .5rem; text-transform: capitalize; }
.count { font-weight: 400; color: var(--muted); }
ol.cards { list-style: none; padding: 0; margin: 0; }
.card { background: var(--surface); border: 1px solid var(--border); border-radius: var(--radius); padding: .5rem; \
margin-bottom: .5rem; }
.card p { margin: 0 0 .25rem; }
.card .meta, .item .meta { font-size: .85rem; color: var(--muted); }
.board.draggable .card[draggable=true] { cursor: grab; }
.card.dragging { opacity: .5; }
.card .grip { float: right; width: 1.75rem; height: 1.75rem; margin: -.25rem -.25rem 0 .25rem; cursor: grab; \
touch-action: none; border-radius: var(--radius); background: radial-gradient(var(--border-strong) 1.5px, \
transparent 2px) 0 0 / .5rem \
.5rem content-box; padding: .35rem; }
.card.drop-before { box-shadow: 0 -3px 0 var(--accent); }
ol.cards.drop-end { box-shadow: 0 3px 0 var(--accent); }
.card form.move { display: flex; flex-wrap: wrap; gap: .25rem; margin-top: .25rem; }
.card form.move button, .card form.move select { padding: .15rem .45rem; font-size: .8rem; }
ul.tags { display: flex; flex-wrap: wrap; gap: var(--space-1); list-style: none; padding: 0; margin: var(--space-1) 0; }
ul.tags li { background: var(--notice-bg); border-radius: 3px; padding: 0 .4rem; font-size: .8rem; }
a.more { display: block; text-align: center; padding: .25rem; }
.field-error { display: block; color: var(--danger); font-size: .9rem; }
.field-warning { display: block; color: var(--warning); font-size: .9rem; }
.actions form { display: inline; }
.confirm { padding: var(--space-3) var(--space-4); border-radius: var(--radius); background: var(--notice-bg); \
border: 1px solid var(--notice-border); }
.conflict { border-left: 3px solid var(--danger); padding-left: var(--space-2); margin: var(--space-1) 0; }
.conflict .theirs { white-space: pre-wrap; margin: var(--space-1) 0; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: var(--space-1) var(--space-4); }
dl.facts dd { margin: 0; }
.markdown { background: var(--surface); border: 1px solid var(--border); border-radius: var(--radius); padding: \
var(--space-1) var(--space-4); overflow-wrap: anywhere; }
.markdown pre { white-space: pre-wrap; }
table.deploys, table.list { border-collapse: collapse; width: 100%; }
table.deploys th, table.deploys td, table.list th, table.list td { text-align: left; padding: var(--space-1) \
var(--space-2); border-bottom: 1px solid var(--border); vertical-align: top; }
table.list form { display: inline; margin: 0; }
form.webhook label.check { display: inline-flex; align-items: center; gap: .4rem; font-weight: 400; margin: 0 \
var(--space-4) 0 0; }
section.deploy { background: var(--surface); border: 1px solid var(--border); border-radius: var(--radius); \
padding: var(--space-2) var(--space-4); margin-bottom: var(--space-3); }
section.deploy h2 { font-size: 1.1rem; margin: var(--space-1) 0; }
fieldset { border: 1px solid var(--border); border-radius: var(--radius); margin: 0 0 var(--space-4); }
form.notifications label.check { display: inline-flex; align-items: center; gap: .4rem; font-weight: 400; margin: 0; }
ul.environments { list-style: none; padding: 0 0 0 var(--space-6); margin: 0 0 var(--space-3); display: flex; \
flex-wrap: wrap; gap: var(--space-1) 1.25rem; }
.sr-only { position: absolute; width: 1px; height: 1px; padding: 0; margin: -1px; overflow: hidden; clip: rect(0 0 0 \
0); white-space: nowrap; border: 0; }
nav.tabs { display: flex; flex-wrap: wrap; gap: var(--space-1) 1.25rem; margin: 0 0 var(--space-4); border-bottom: \
1px solid var(--border); }
nav.tabs a { padding: var(--space-1) 0; }
nav.tabs a[aria-current] { font-weight: 700; color: inherit; text-decoration: none; border-bottom: 3px solid \
var(--fg); }
.table-scroll { position: relative; overflow-x: auto; max-width: 100%; margin-bottom: var(--space-4); background: \
var(--surface); border: 1px solid var(--border); border-radius: var(--radius); }
.table-scroll:focus-visible { outline: 3px solid var(--focus); outline-offset: 2px; }
.table-scroll table.deploys { width: auto; min-width: 100%; }
.table-scroll table.deploys th, .table-scroll table.deploys td { white-space: nowrap; }
.table-scroll table.deploys th[scope=row] { font-weight: 400; }
table.matrix { border-collapse: collapse; min-width: 100%; }
table.matrix caption { caption-side: top; text-align: left; padding: var(--space-2); color: var(--muted); }
table.matrix th, table.matrix td { text-align: left; vertical-align: top; padding: .3rem .6rem; border-bottom: 1px \
solid var(--border); }
table.matrix thead th { overflow-wrap: break-word; background: var(--surface-2); }
table.matrix tbody th { font-weight: 400; min-width: 9rem; max-width: 20rem; overflow-wrap: break-word; position: \
sticky; left: 0; background: var(--surface); border-right: 1px solid var(--border); }
table.matrix td { white-space: nowrap; }
table.matrix td.never { color: var(--muted); }
td.reverted a { text-decoration: line-through; }
.reverted-note { color: var(--danger); }
ol.timeline, ol.conversation { list-style: none; margin: 0 0 var(--space-4); padding: 0 0 0 1.25rem; border-left: \
2px solid var(--border-strong); }
ol.timeline li, ol.conversation li { position: relative; margin: 0 0 var(--space-3); }
ol.timeline li::before, ol.conversation li::before { content: ""; position: absolute; left: calc(-1.25rem - 1px); \
top: .45rem; width: .75rem; \
height: .75rem; transform: translateX(-50%); border-radius: 50%; background: var(--accent); border: 2px solid \
var(--bg); }
ol.timeline li.reverted::before { background: var(--surface); border-color: var(--danger); }
ol.timeline time, ol.conversation time { font-size: .85rem; color: var(--muted); }
ol.timeline p, ol.conversation p { margin: 0; overflow-wrap: anywhere; }
.mark { display: inline-flex; align-items: center; gap: .15rem; margin-left: .35rem; padding: 0 .3rem; \
border-radius: 3px; font-size: .8rem; }
.mark.blocked { background: var(--error-bg); color: var(--blocked-fg); border: 1px solid var(--error-border); \
font-weight: 600; }
.mark.comments { color: var(--muted); }
.mark.comments::before { content: ""; width: .7rem; height: .55rem; border: 1.5px solid currentColor; border-radius: \
2px 2px 2px 0; }
.item-actions { display: flex; flex-wrap: wrap; align-items: center; gap: var(--space-2) var(--space-6); }
.item-actions form, form.inline { margin: 0; }
form.favorite .star { background: var(--surface); color: var(--fg); border-color: var(--border-strong); }
form.favorite .star[aria-pressed=true] { background: var(--star-bg); border-color: var(--star-border); \
font-weight: 600; }
button.secondary { background: var(--surface); color: var(--accent); }
button.danger { background: var(--danger); border-color: var(--danger); color: var(--on-accent); }
button.small { padding: .1rem var(--space-2); font-size: .85rem; }
ul.blocks li form { display: inline; margin: 0; }
.unblocked { color: var(--muted); font-style: italic; }
input[type=number] { width: 7rem; padding: .45rem; font: inherit; border: 1px solid var(--border-strong); \
border-radius: var(--radius); }
ol.conversation li.comment .markdown { margin-top: var(--space-1); }
ol.conversation li.created::before, ol.conversation li.change::before { background: var(--muted); }
.preview { margin: var(--space-2) 0; }
blockquote.quoted { white-space: pre-wrap; overflow-wrap: anywhere; background: var(--surface); border-left: 3px \
solid var(--border-strong); margin: var(--space-2) 0; padding: var(--space-2) var(--space-4); }
/* Focus rings: 3 px, in a colour that stands out on every background of the scheme (the header has its own). */
:focus-visible { outline: 3px solid var(--focus); outline-offset: 2px; }
header :focus-visible { outline-color: var(--header-fg); }
input, select, textarea { background: var(--surface); color: var(--fg); }
/* Tables break between words only; a table wider than its page scrolls inside its own box. */
th, td { overflow-wrap: normal; word-break: normal; hyphens: manual; }
table.list th, table.list td { white-space: nowrap; }
table.list td.prose { white-space: normal; min-width: 16rem; }
fieldset { min-width: 0; }
.table-scroll > table.list { min-width: 100%; }
.table-scroll table.list th, .table-scroll table.list td { padding: var(--space-1) var(--space-2); }
/* The page of a link followed from a message (an invitation, unsubscribing): the same look, one column. */
main.link-page { max-width: 36rem; }
main.link-page code { overflow-wrap: anywhere; }
/* The board: compact cards with one move menu, the keys panel, columns as tabs on a phone. */
.board .column { flex: 1 1 17rem; max-width: 26rem; }
form.filters input[name=tags] { width: 11rem; display: inline-block; }
form.filters #tags-hint { font-size: .75rem; }
.card { position: relative; padding: .3rem .45rem; margin-bottom: .3rem; line-height: 1.3; }
.card p { margin: 0; }
.card:focus { outline: 2px solid var(--focus); outline-offset: 1px; }
.card .meta { padding-right: 3.5rem; }
.card .title { font-size: .9rem; overflow: hidden; display: -webkit-box; -webkit-line-clamp: 1; \
-webkit-box-orient: vertical; }
ol.results .tags span, .card .tags span { background: var(--notice-bg); border-radius: 3px; padding: 0 .3rem; \
margin-left: .2rem; font-size: .75rem; }
.card .who { display: inline-block; min-width: 1.5rem; text-align: center; border-radius: 50%; background: \
var(--surface-2); \
font-size: .7rem; font-weight: 600; margin-left: .2rem; color: var(--fg); }
.card .parent { font-size: .8rem; }
.card details.move > summary { position: absolute; top: .2rem; right: .3rem; font-size: .8rem; cursor: pointer; \
color: var(--accent); list-style: none; padding: 0 .25rem; }
.card details.move > summary::-webkit-details-marker { display: none; }
.card details.move[open] > form.move { margin-top: .3rem; }
.card details.subs { font-size: .8rem; }
.card details.subs ul { margin: .1rem 0 0; padding-left: 1rem; }
.board.draggable .card .grip { float: none; position: absolute; right: .1rem; bottom: .1rem; margin: 0; \
width: 1.5rem; height: 1.5rem; padding: .3rem; }
.board.draggable .card .title { padding-right: 1.5rem; }
.column h2 .order { font-size: .75rem; text-transform: none; }
.column h3.sub-cards { font-size: .85rem; margin: .5rem 0 .25rem; }
ul.cards { list-style: none; padding: 0; margin: 0; }
.board-help { font-size: .8rem; margin: .25rem 0; }
.column-tabs { display: none; }
.keys.panel { position: fixed; z-index: 10; top: 4rem; right: 1rem; max-width: 24rem; background: var(--surface); \
border: 1px solid var(--border-strong); border-radius: 4px; padding: .5rem 1rem; box-shadow: 0 4px 16px \
rgba(0,0,0,.2); }
.keys dl { display: grid; grid-template-columns: max-content 1fr; gap: .2rem 1rem; margin: 0; }
.keys dd { margin: 0; }
button.danger { background: var(--danger); border-color: var(--danger); color: var(--on-accent); }
/* Search: the header's box, the results page (its form, compact results with the facets beside or below), the
 * marked words. */
input[type=search] { padding: var(--space-2); font: inherit; border: 1px solid var(--border-strong); border-radius: \
var(--radius); }
header form.search { display: flex; gap: var(--space-1); align-items: center; }
header form.search input { width: 13rem; max-width: 100%; padding: .25rem var(--space-2); }
header form.search button { border-color: var(--header-fg); }
form.search-page input[type=search] { width: 100%; max-width: 28rem; }
form.search-page p { margin: 0 0 var(--space-2); }
form.search-page small { display: block; font-size: .8rem; }
form.filters input[name=q] { width: 10rem; display: inline-block; }
.summary { margin: var(--space-2) 0; }
.terms .term { display: inline-block; background: var(--surface-2); border-radius: 3px; padding: 0 var(--space-2); }
.terms .term a { padding: 0 var(--space-1); }
nav.sorts, nav.pages { display: flex; flex-wrap: wrap; gap: var(--space-1) var(--space-3); margin: var(--space-2) 0; }
nav.sorts a[aria-current], .facets a[aria-current] { font-weight: 700; color: inherit; }
.search-results { display: flex; flex-wrap: wrap; align-items: flex-start; gap: var(--space-4); }
.search-results .results { flex: 1 1 26rem; min-width: 0; }
.facets { flex: 0 1 12rem; font-size: .9rem; }
.facets h2 { font-size: 1rem; margin: 0 0 var(--space-1); }
.facets h3 { font-size: .9rem; margin: var(--space-2) 0 0; color: var(--muted); }
.facets ul { list-style: none; padding: 0; margin: 0; overflow-wrap: anywhere; }
ol.results { list-style: none; padding: 0; margin: 0; }
ol.results li { background: var(--surface); border: 1px solid var(--border); border-radius: var(--radius); padding: \
.3rem .5rem; margin-bottom: .3rem; line-height: 1.35; }
ol.results p { margin: 0; overflow-wrap: anywhere; }
ol.results .meta { font-size: .85rem; color: var(--muted); }
ol.results .excerpt { font-size: .85rem; color: var(--muted); white-space: nowrap; overflow: hidden; text-overflow: \
ellipsis; }
mark { background: var(--star-bg); color: inherit; box-shadow: 0 1px 0 var(--star-border); padding: 0 .05em; }
@media (max-width: 40rem) {
  .column-tabs { display: flex; flex-wrap: wrap; gap: .25rem; margin: .5rem 0; }
  .column-tabs a { padding: .3rem .6rem; border-radius: 4px; background: var(--surface-2); text-transform: capitalize; }
  .column-tabs a[aria-current], .column-tabs a[aria-current] .count { background: var(--fg); color: var(--surface); }
  .board.tabbed .column { display: none; }
  .board.tabbed .column.current { display: block; }
  .board-help { display: none; }
}
@media (max-width: 40rem) { .board { flex-direction: column; width: auto; margin-left: 0; } .column { flex: none; } }
`;
