//! A terminal screen as it looks, colours included, for a person watching (the web view):
//! rows of runs of equally styled text, read from the emulator the shell tools use.

/// One stretch of a row drawn in one style.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Run {
    pub text: String,
    pub style: Style,
}

/// How a run is drawn. Colours are `0xRRGGBB`; `None` is the terminal's default.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Style {
    pub fg: Option<u32>,
    pub bg: Option<u32>,
    pub bold: bool,
    pub dim: bool,
    pub italic: bool,
    pub underline: bool,
    pub inverse: bool,
}

/// A whole screen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StyledScreen {
    pub cols: u16,
    pub rows: u16,
    pub cursor_row: u16,
    pub cursor_col: u16,
    pub alternate: bool,
    /// One entry per row, top to bottom; a row's trailing blank default-styled cells are left
    /// out.
    pub lines: Vec<Vec<Run>>,
}

/// The screen `screen` shows now.
pub(crate) fn styled(screen: &vt100::Screen) -> StyledScreen {
    let (rows, cols) = screen.size();
    let (rows, cols) = (rows.get(), cols.get());
    let (cursor_row, cursor_col) = screen.cursor_position();
    let lines = (0..rows).map(|row| line(screen, row, cols)).collect();
    StyledScreen {
        cols,
        rows,
        cursor_row,
        cursor_col,
        alternate: screen.alternate_screen(),
        lines,
    }
}

fn line(screen: &vt100::Screen, row: u16, cols: u16) -> Vec<Run> {
    let mut runs: Vec<Run> = Vec::new();
    for col in 0..cols {
        let Some(cell) = screen.cell(row, col) else {
            continue;
        };
        if cell.is_wide_continuation() {
            continue;
        }
        let style = Style {
            fg: rgb(cell.fgcolor()),
            bg: rgb(cell.bgcolor()),
            bold: cell.bold(),
            dim: cell.dim(),
            italic: cell.italic(),
            underline: cell.underline(),
            inverse: cell.inverse(),
        };
        let text = if cell.has_contents() {
            cell.contents()
        } else {
            " "
        };
        match runs.last_mut() {
            Some(last) if last.style == style => last.text.push_str(text),
            _ => runs.push(Run {
                text: text.to_owned(),
                style,
            }),
        }
    }
    // Blank default cells at the end of a row draw nothing.
    while let Some(last) = runs.last_mut() {
        if last.style != Style::default() {
            break;
        }
        let kept = last.text.trim_end_matches(' ').len();
        last.text.truncate(kept);
        if !last.text.is_empty() {
            break;
        }
        runs.pop();
    }
    runs
}

/// The colour an xterm shows for `color` (256-colour palette), or `None` for the default.
fn rgb(color: vt100::Color) -> Option<u32> {
    const BASE: [u32; 16] = [
        0x000000, 0xcd0000, 0x00cd00, 0xcdcd00, 0x0000ee, 0xcd00cd, 0x00cdcd, 0xe5e5e5, 0x7f7f7f,
        0xff0000, 0x00ff00, 0xffff00, 0x5c5cff, 0xff00ff, 0x00ffff, 0xffffff,
    ];
    const LEVELS: [u32; 6] = [0, 95, 135, 175, 215, 255];
    match color {
        vt100::Color::Default => None,
        vt100::Color::Rgb(r, g, b) => Some(u32::from(r) << 16 | u32::from(g) << 8 | u32::from(b)),
        vt100::Color::Idx(i @ 0..=15) => Some(BASE[usize::from(i)]),
        vt100::Color::Idx(i @ 16..=231) => {
            let i = usize::from(i - 16);
            Some(LEVELS[i / 36] << 16 | LEVELS[i / 6 % 6] << 8 | LEVELS[i % 6])
        }
        vt100::Color::Idx(i) => {
            let grey = 8 + 10 * u32::from(i - 232);
            Some(grey << 16 | grey << 8 | grey)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn screen_of(bytes: &[u8]) -> StyledScreen {
        let mut parser = vt100::Parser::new(
            std::num::NonZeroU16::new(3).unwrap(),
            std::num::NonZeroU16::new(20).unwrap(),
            0,
        );
        parser.process(bytes);
        styled(parser.screen())
    }

    #[test]
    fn runs_keep_colours_and_attributes_and_drop_trailing_blanks() {
        let s =
            screen_of(b"plain \x1b[1;31mred\x1b[0m \x1b[38;5;21mblue\x1b[0m\r\n\x1b[7mrev\x1b[0m");
        let row = &s.lines[0];
        let texts: Vec<&str> = row.iter().map(|r| r.text.as_str()).collect();
        assert_eq!(texts, ["plain ", "red", " ", "blue"]);
        assert_eq!(row[1].style.fg, Some(0xcd0000));
        assert!(row[1].style.bold);
        assert_eq!(row[3].style.fg, Some(0x0000ff), "index 21 of the cube");
        assert!(s.lines[1][0].style.inverse);
        assert!(s.lines[2].is_empty());
        assert_eq!((s.rows, s.cols), (3, 20));
    }

    #[test]
    fn greys_and_truecolour_map_as_xterm_draws_them() {
        assert_eq!(rgb(vt100::Color::Idx(232)), Some(0x080808));
        assert_eq!(rgb(vt100::Color::Idx(255)), Some(0xeeeeee));
        assert_eq!(rgb(vt100::Color::Rgb(1, 2, 3)), Some(0x010203));
        assert_eq!(rgb(vt100::Color::Default), None);
    }
}
