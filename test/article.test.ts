import assert from 'node:assert/strict';
import { test } from 'node:test';
import { indefiniteArticle } from '../src/items/article.js';
import { storyTitle } from '../src/items/model.js';

const cases: [string, 'a' | 'an'][] = [
  ['user', 'a'],
  ['unicorn', 'a'],
  ['European', 'a'],
  ['one-off', 'a'],
  ['one', 'a'],
  ['evil genius', 'an'],
  ['admin', 'an'],
  ['hour', 'an'],
  ['honest buyer', 'an'],
  ['8-year-old', 'an'],
  ['11-year-old', 'an'],
  ['18th-century scholar', 'an'],
  ['80s fan', 'an'],
  ['1-person team', 'a'],
  ['100-strong team', 'a'],
  ['110-year-old', 'a'],
  ['developer', 'a'],
  ['hacker', 'a'],
  ['historian', 'a'],
  ['umbrella maker', 'an'],
  ['uninvited guest', 'an'],
  ['unhappy customer', 'an'],
  ['usher', 'an'],
  ['urgent caller', 'an'],
  ['used-car dealer', 'a'],
  ['Ukrainian developer', 'a'],
  ['onerous reviewer', 'an'],
  ['owner', 'an'],
  ['FBI agent', 'an'],
  ['SQL expert', 'an'],
  ['URL shortener', 'a'],
  ['NASA engineer', 'a'],
  ['API consumer', 'an'],
  ['x', 'an'],
  ['a', 'an'],
  ['u', 'a'],
  ['"evil" genius', 'an'],
  ['  user', 'a'],
  ['', 'a'],
];

test('the article follows the sound of the first word, not its first letter', () => {
  for (const [who, article] of cases) assert.equal(indefiniteArticle(who), article, `"${article} ${who}"`);
});

test('story titles read as English', () => {
  assert.equal(storyTitle('user', 'to log in', 'I see my work'), 'As a user, I want to log in so that I see my work.');
  assert.equal(storyTitle('hour-long meeting', 'x', 'y'), 'As an hour-long meeting, I want x so that y.');
  assert.equal(storyTitle('evil genius', 'henchmen', 'I win'), 'As an evil genius, I want henchmen so that I win.');
});
