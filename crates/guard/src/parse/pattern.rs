//! Shell patterns as `${X%pattern}` and its kin read them: `*`, `?` and `[…]` classes.

/// `value` with the shortest (or `longest`) match of the glob `pattern` cut from its start
/// (`from_start`) or end; `value` when none matches.
pub(super) fn trimmed(value: &str, pattern: &str, from_start: bool, longest: bool) -> String {
    let mut cuts: Vec<usize> = (0..=value.len())
        .filter(|i| value.is_char_boundary(*i))
        .collect();
    // Shortest first: from the start, the cut grows; from the end, the cut point falls.
    if from_start == longest {
        cuts.reverse();
    }
    for i in cuts {
        let (head, tail) = value.split_at(i);
        if from_start && glob_matches(pattern, head) {
            return tail.to_owned();
        }
        if !from_start && glob_matches(pattern, tail) {
            return head.to_owned();
        }
    }
    value.to_owned()
}

/// Whether `text` matches the shell glob `pattern` (`*`, `?`, `[…]`).
pub(super) fn glob_matches(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    let (mut pi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && p[pi] == '*' {
            star = Some((pi, ti));
            pi += 1;
            continue;
        }
        if pi < p.len()
            && let Some(next) = one_char_matches(&p, pi, t[ti])
        {
            pi = next;
            ti += 1;
            continue;
        }
        match star {
            Some((sp, st)) => {
                pi = sp + 1;
                ti = st + 1;
                star = Some((sp, st + 1));
            }
            None => return false,
        }
    }
    p[pi..].iter().all(|c| *c == '*')
}

/// Whether the pattern element at `p[i]` (not `*`) matches `c`; the index after it if so.
fn one_char_matches(p: &[char], i: usize, c: char) -> Option<usize> {
    match p[i] {
        '?' => Some(i + 1),
        '[' => {
            let mut j = i + 1;
            let negate = matches!(p.get(j), Some('!' | '^'));
            if negate {
                j += 1;
            }
            let start = j;
            let mut hit = false;
            while j < p.len() && (p[j] != ']' || j == start) {
                if p.get(j + 1) == Some(&'-') && p.get(j + 2).is_some_and(|e| *e != ']') {
                    hit |= p[j] <= c && c <= p[j + 2];
                    j += 3;
                } else {
                    hit |= p[j] == c;
                    j += 1;
                }
            }
            if j >= p.len() {
                // No closing bracket: a literal `[`.
                return (c == '[').then_some(i + 1);
            }
            (hit != negate).then_some(j + 1)
        }
        '\\' if i + 1 < p.len() => (p[i + 1] == c).then_some(i + 2),
        literal => (literal == c).then_some(i + 1),
    }
}
