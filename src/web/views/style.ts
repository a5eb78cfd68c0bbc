/** The one stylesheet of the pages, served by Shiplog itself (`/app/style.css`). */
export const STYLESHEET = `
*, *::before, *::after { box-sizing: border-box; }
html { -webkit-text-size-adjust: 100%; }
body { margin: 0; font: 16px/1.5 -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; color: #1d2327; \
background: #f6f7f9; }
a { color: #0b5cad; }
header { display: flex; flex-wrap: wrap; align-items: center; gap: .5rem 1rem; padding: .6rem 1rem; background: \
#1d2327; color: #fff; }
header a { color: #fff; text-decoration: none; }
header .brand { font-weight: 700; margin-right: auto; }
header form { margin: 0; }
main { max-width: 52rem; margin: 0 auto; padding: 1rem; }
h1 { font-size: 1.4rem; margin: .5rem 0 1rem; }
label { display: block; font-weight: 600; margin-bottom: .25rem; }
input[type=email], input[type=text] { width: 100%; max-width: 28rem; padding: .5rem; font: inherit; border: 1px \
solid #a7aaad; border-radius: 4px; }
button { font: inherit; padding: .45rem 1rem; border: 1px solid #0b5cad; border-radius: 4px; background: #0b5cad; \
color: #fff; cursor: pointer; }
button.link { background: none; border: none; color: inherit; padding: 0; text-decoration: underline; }
.notice { padding: .75rem 1rem; border-radius: 4px; background: #e7f1fb; border: 1px solid #b6d4f2; }
.error { padding: .75rem 1rem; border-radius: 4px; background: #fbeaea; border: 1px solid #e6b3b3; }
code.key { display: inline-block; padding: .3rem .5rem; font-size: 1.1rem; background: #fff; border: 1px solid #ccc; \
word-break: break-all; }
ul.products { list-style: none; padding: 0; margin: 0; }
ul.products li { background: #fff; border: 1px solid #dcdcde; border-radius: 4px; padding: .75rem 1rem; \
margin-bottom: .75rem; }
ul.products .name { font-weight: 600; }
ul.counts { display: flex; flex-wrap: wrap; gap: .25rem .75rem; list-style: none; padding: 0; margin: .25rem 0 0; \
font-size: .9rem; color: #50575e; }
.muted { color: #646970; font-size: .9rem; }
nav.product { display: flex; flex-wrap: wrap; gap: .25rem 1rem; margin-bottom: 1rem; }
nav.product a[aria-current] { font-weight: 700; text-decoration: none; color: inherit; }
form.filters { display: flex; flex-wrap: wrap; align-items: flex-end; gap: .5rem 1rem; margin-bottom: 1rem; }
form.filters label { font-weight: 400; margin: 0; }
form.filters label.check { align-self: center; }
select, textarea { font: inherit; padding: .4rem; border: 1px solid #a7aaad; border-radius: 4px; max-width: 100%; }
textarea { width: 100%; }
.board { display: flex; gap: .75rem; overflow-x: auto; width: calc(100vw - 2rem); margin-left: calc(50% - 50vw + \
1rem); padding-bottom: .5rem; }
.column { flex: 0 0 17rem; background: #eceef1; border-radius: 4px; padding: .5rem; }
.column h2 { font-size: 1rem; margin: 0 0 .5rem; text-transform: capitalize; }
.count { font-weight: 400; color: #646970; }
ol.cards { list-style: none; padding: 0; margin: 0; }
.card { background: #fff; border: 1px solid #dcdcde; border-radius: 4px; padding: .5rem; margin-bottom: .5rem; }
.card p { margin: 0 0 .25rem; }
.card .meta, .item .meta { font-size: .85rem; color: #50575e; }
.board.draggable .card[draggable=true] { cursor: grab; }
.card.dragging { opacity: .5; }
.card .grip { float: right; width: 1.75rem; height: 1.75rem; margin: -.25rem -.25rem 0 .25rem; cursor: grab; \
touch-action: none; border-radius: 4px; background: radial-gradient(#8c8f94 1.5px, transparent 2px) 0 0 / .5rem \
.5rem content-box; padding: .35rem; }
.card.drop-before { box-shadow: 0 -3px 0 #2271b1; }
ol.cards.drop-end { box-shadow: 0 3px 0 #2271b1; }
.card form.move { display: flex; flex-wrap: wrap; gap: .25rem; margin-top: .25rem; }
.card form.move button, .card form.move select { padding: .15rem .45rem; font-size: .8rem; }
ul.tags { display: flex; flex-wrap: wrap; gap: .25rem; list-style: none; padding: 0; margin: .25rem 0; }
ul.tags li { background: #e7f1fb; border-radius: 3px; padding: 0 .4rem; font-size: .8rem; }
a.more { display: block; text-align: center; padding: .25rem; }
.field-error { display: block; color: #b32d2e; font-size: .9rem; }
.conflict { border-left: 3px solid #b32d2e; padding-left: .5rem; margin: .25rem 0; }
.conflict .theirs { white-space: pre-wrap; margin: .25rem 0; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: .25rem 1rem; }
dl.facts dd { margin: 0; }
.markdown { background: #fff; border: 1px solid #dcdcde; border-radius: 4px; padding: .25rem 1rem; overflow-wrap: \
anywhere; }
.markdown pre { white-space: pre-wrap; }
table.deploys, table.list { border-collapse: collapse; width: 100%; }
table.deploys th, table.deploys td, table.list th, table.list td { text-align: left; padding: .25rem .5rem; \
border-bottom: 1px solid #dcdcde; vertical-align: top; }
table.list td { overflow-wrap: anywhere; }
table.list form { display: inline; margin: 0; }
form.webhook label.check { display: inline-flex; align-items: center; gap: .4rem; font-weight: 400; margin: 0 1rem 0 \
0; }
section.deploy { background: #fff; border: 1px solid #dcdcde; border-radius: 4px; padding: .5rem 1rem; \
margin-bottom: .75rem; }
section.deploy h2 { font-size: 1.1rem; margin: .25rem 0; }
fieldset { border: 1px solid #dcdcde; border-radius: 4px; margin: 0 0 1rem; }
form.notifications label.check { display: inline-flex; align-items: center; gap: .4rem; font-weight: 400; margin: 0; }
ul.environments { list-style: none; padding: 0 0 0 1.5rem; margin: 0 0 .75rem; display: flex; flex-wrap: wrap; gap: \
.25rem 1.25rem; }
.sr-only { position: absolute; width: 1px; height: 1px; padding: 0; margin: -1px; overflow: hidden; clip: rect(0 0 0 \
0); white-space: nowrap; border: 0; }
nav.tabs { display: flex; flex-wrap: wrap; gap: .25rem 1.25rem; margin: 0 0 1rem; border-bottom: 1px solid #dcdcde; }
nav.tabs a { padding: .25rem 0; }
nav.tabs a[aria-current] { font-weight: 700; color: inherit; text-decoration: none; border-bottom: 3px solid #1d2327; }
.table-scroll { overflow-x: auto; max-width: 100%; margin-bottom: 1rem; background: #fff; border: 1px solid #dcdcde; \
border-radius: 4px; }
.table-scroll:focus-visible { outline: 2px solid #0b5cad; outline-offset: 2px; }
.table-scroll table.deploys { width: auto; min-width: 100%; }
.table-scroll table.deploys th, .table-scroll table.deploys td { white-space: nowrap; }
.table-scroll table.deploys th[scope=row] { font-weight: 400; }
table.matrix { border-collapse: collapse; min-width: 100%; }
table.matrix caption { caption-side: top; text-align: left; padding: .5rem; color: #50575e; }
table.matrix th, table.matrix td { text-align: left; vertical-align: top; padding: .3rem .6rem; border-bottom: 1px \
solid #dcdcde; }
table.matrix thead th { overflow-wrap: break-word; background: #eceef1; }
table.matrix tbody th { font-weight: 400; min-width: 9rem; max-width: 20rem; overflow-wrap: anywhere; position: \
sticky; left: 0; background: #fff; border-right: 1px solid #dcdcde; }
table.matrix td { white-space: nowrap; }
table.matrix td.never { color: #a7aaad; }
td.reverted a { text-decoration: line-through; }
.reverted-note { color: #b32d2e; }
ol.timeline, ol.conversation { list-style: none; margin: 0 0 1rem; padding: 0 0 0 1.25rem; border-left: 2px solid \
#c3c4c7; }
ol.timeline li, ol.conversation li { position: relative; margin: 0 0 .75rem; }
ol.timeline li::before, ol.conversation li::before { content: ""; position: absolute; left: calc(-1.25rem - 1px); \
top: .45rem; width: .75rem; \
height: .75rem; transform: translateX(-50%); border-radius: 50%; background: #0b5cad; border: 2px solid #f6f7f9; }
ol.timeline li.reverted::before { background: #fff; border-color: #b32d2e; }
ol.timeline time, ol.conversation time { font-size: .85rem; color: #50575e; }
ol.timeline p, ol.conversation p { margin: 0; overflow-wrap: anywhere; }
.mark { display: inline-flex; align-items: center; gap: .15rem; margin-left: .35rem; padding: 0 .3rem; \
border-radius: 3px; font-size: .8rem; }
.mark.blocked { background: #fbeaea; color: #8a1f11; border: 1px solid #e6b3b3; font-weight: 600; }
.mark.comments { color: #50575e; }
.mark.comments::before { content: ""; width: .7rem; height: .55rem; border: 1.5px solid currentColor; border-radius: \
2px 2px 2px 0; }
.item-actions { display: flex; flex-wrap: wrap; align-items: center; gap: .5rem 1.5rem; }
.item-actions form, form.inline { margin: 0; }
form.favorite .star { background: #fff; color: #1d2327; border-color: #a7aaad; }
form.favorite .star[aria-pressed=true] { background: #fff6d6; border-color: #b8860b; font-weight: 600; }
button.secondary { background: #fff; color: #0b5cad; }
button.danger { background: #b32d2e; border-color: #b32d2e; }
button.small { padding: .1rem .5rem; font-size: .85rem; }
ul.blocks li form { display: inline; margin: 0; }
.unblocked { color: #646970; font-style: italic; }
input[type=number] { width: 7rem; padding: .45rem; font: inherit; border: 1px solid #a7aaad; border-radius: 4px; }
ol.conversation li.comment .markdown { margin-top: .25rem; }
ol.conversation li.created::before, ol.conversation li.change::before { background: #646970; }
.preview { margin: .5rem 0; }
blockquote.quoted { white-space: pre-wrap; overflow-wrap: anywhere; background: #fff; border-left: 3px solid #c3c4c7; \
margin: .5rem 0; padding: .5rem 1rem; }
/* The board: compact cards with one move menu, the keys panel, columns as tabs on a phone. */
.board .column { flex: 1 1 17rem; max-width: 26rem; }
form.filters input[name=tags] { width: 11rem; display: inline-block; }
form.filters #tags-hint { font-size: .75rem; }
.card { position: relative; padding: .3rem .45rem; margin-bottom: .3rem; line-height: 1.3; }
.card p { margin: 0; }
.card:focus { outline: 2px solid #2271b1; outline-offset: 1px; }
.card .meta { padding-right: 3.5rem; }
.card .title { font-size: .9rem; overflow: hidden; display: -webkit-box; -webkit-line-clamp: 1; \
-webkit-box-orient: vertical; }
.card .tags span { background: #e7f1fb; border-radius: 3px; padding: 0 .3rem; margin-left: .2rem; font-size: .75rem; }
.card .who { display: inline-block; min-width: 1.5rem; text-align: center; border-radius: 50%; background: #dcdcde; \
font-size: .7rem; font-weight: 600; margin-left: .2rem; color: #1d2327; }
.card .parent { font-size: .8rem; }
.card details.move > summary { position: absolute; top: .2rem; right: .3rem; font-size: .8rem; cursor: pointer; \
color: #0b5cad; list-style: none; padding: 0 .25rem; }
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
.keys.panel { position: fixed; z-index: 10; top: 4rem; right: 1rem; max-width: 24rem; background: #fff; \
border: 1px solid #a7aaad; border-radius: 4px; padding: .5rem 1rem; box-shadow: 0 4px 16px rgba(0,0,0,.2); }
.keys dl { display: grid; grid-template-columns: max-content 1fr; gap: .2rem 1rem; margin: 0; }
.keys dd { margin: 0; }
.confirm { background: #fff; border: 1px solid #dcdcde; border-radius: 4px; padding: 1rem; max-width: 40rem; }
button.danger { background: #b32d2e; border-color: #b32d2e; color: #fff; }
@media (max-width: 40rem) {
  .column-tabs { display: flex; flex-wrap: wrap; gap: .25rem; margin: .5rem 0; }
  .column-tabs a { padding: .3rem .6rem; border-radius: 4px; background: #eceef1; text-transform: capitalize; }
  .column-tabs a[aria-current], .column-tabs a[aria-current] .count { background: #1d2327; color: #fff; }
  .board.tabbed .column { display: none; }
  .board.tabbed .column.current { display: block; }
  .board-help { display: none; }
}
@media (max-width: 40rem) { .board { flex-direction: column; width: auto; margin-left: 0; } .column { flex: none; } }
`;
