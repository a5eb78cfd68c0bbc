/**
 * "a" or "an" before a phrase, by how its first word sounds rather than how it is spelled:
 * "a user", "a unicorn", "a European", "a one-off", but "an evil genius", "an hour",
 * "an honest buyer", "an 8-year-old", "an FBI agent". English has no rule that needs no list;
 * these are the common cases, and anything not covered goes by its first letter.
 */
export function indefiniteArticle(phrase: string): 'a' | 'an' {
  const word = /[\p{L}\p{N}][\p{L}\p{N}'\u2019]*/u.exec(phrase)?.[0] ?? '';
  if (word === '') return 'a';
  if (/^\d/.test(word)) return numberTakesAn(/^\d+/.exec(word)![0]) ? 'an' : 'a';
  const lower = word.toLowerCase();
  if (isSpeltOut(word)) return LETTERS_SAID_WITH_A_VOWEL.includes(lower[0]) ? 'an' : 'a';
  if (SILENT_H.some((stem) => lower.startsWith(stem))) return 'an';
  if (SAID_WITH_Y_OR_W.test(lower) && !SAID_WITH_A_VOWEL_AFTER_ALL.some((stem) => lower.startsWith(stem))) return 'a';
  return /^[aeiou]/.test(lower) ? 'an' : 'a';
}

/** Letters whose names start with a vowel sound: "an F", "an x", "an MBA". */
const LETTERS_SAID_WITH_A_VOWEL = 'aefhilmnorsx';

/** Words whose h is silent. */
const SILENT_H = ['hour', 'honest', 'honor', 'honour', 'heir'];

/**
 * Vowels said with a consonant first: "u" as "you" (user, unicorn, usual, utility, uranium,
 * euro), "one" and "once" with a "w".
 */
const SAID_WITH_Y_OR_W = /^(uni|use|usu|uti|ura|uri|uro|ubi|uku|ukr|ufo|ute|uto|uvu|eu|ewe|one\b|one-|once)/;

/** Words that look like the above but start with a vowel sound: "an uninvited guest". */
const SAID_WITH_A_VOWEL_AFTER_ALL = ['unid', 'unim', 'unin', 'unil', 'uniss', 'onerous'];

/** A single letter or an all-capital abbreviation, said letter by letter ("an SQL query", "a URL"). */
function isSpeltOut(word: string): boolean {
  if (word.length === 1) return true;
  return (
    word.length <= 5 && word === word.toUpperCase() && /^\p{Lu}+$/u.test(word) && !/[AEIOU][^AEIOU]+[AEIOU]/.test(word)
  );
}

/** Numbers said starting with a vowel: eight, eighteen, eighty, eight hundred, eleven, eleven thousand. */
function numberTakesAn(digits: string): boolean {
  if (digits.startsWith('8')) return true;
  // 11 and 18, alone or leading a group of thousands (11,000; 18,000,000), are said "eleven", "eighteen".
  return digits.length % 3 === 2 && (digits.startsWith('11') || digits.startsWith('18'));
}
