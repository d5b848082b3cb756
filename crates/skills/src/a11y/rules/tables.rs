//! Data tables: header cells with data, `headers` references, `scope`.

use super::Check;

/// Rows of a table, each a list of (cell index, column index), spans ignored except
/// colspan (which shifts later cells).
fn grid(check: &Check<'_, '_>, table: usize) -> Vec<Vec<(usize, usize)>> {
    let page = check.page;
    let mut rows = Vec::new();
    for r in page.descendants(table) {
        if page.name(r) != "tr" {
            continue;
        }
        // Rows of nested tables belong to them.
        let own = page
            .ancestors(r)
            .find(|&a| page.name(a) == "table")
            .is_some_and(|t| t == table);
        if !own {
            continue;
        }
        let mut column = 0;
        let mut row = Vec::new();
        for c in page.children(r) {
            if matches!(page.name(c), "td" | "th") {
                row.push((c, column));
                let span = page
                    .attr(c, "colspan")
                    .and_then(|s| s.trim().parse::<usize>().ok())
                    .unwrap_or(1)
                    .clamp(1, 1000);
                column += span;
            }
        }
        rows.push(row);
    }
    rows
}

fn has_content(check: &Check<'_, '_>, cell: usize) -> bool {
    !check.page.text(cell).is_empty()
}

/// Whether `table` is a table to check: a `<table>` shown to assistive technology and
/// not made presentational.
fn is_checked_table(check: &Check<'_, '_>, table: usize) -> bool {
    let page = check.page;
    page.name(table) == "table"
        && !page.hidden[table]
        && !page
            .attr_text(table, "role")
            .is_some_and(|r| matches!(r, "none" | "presentation"))
}

/// Whether a cell heads others: a `<th>`, or a cell whose role says so (axe-core's
/// `rowheader`/`columnheader`).
fn is_header(check: &Check<'_, '_>, cell: usize) -> bool {
    let page = check.page;
    match page.attr_text(cell, "role").map(str::to_ascii_lowercase) {
        Some(role) => matches!(role.as_str(), "rowheader" | "columnheader"),
        None => page.name(cell) == "th",
    }
}

/// axe-core's `th-has-data-cells`, on the table: each header with text must head a data
/// cell of its column or row (or be named by a cell's `headers` or `aria-labelledby`).
/// A header that heads none makes the table "needs review", never a violation, as
/// axe-core reports it.
pub(super) fn th_has_data_cells(check: &mut Check<'_, '_>) {
    let page = check.page;
    for table in 0..page.elements.len() {
        if !is_checked_table(check, table) {
            continue;
        }
        let rows = grid(check, table);
        let referenced: Vec<&str> = rows
            .iter()
            .flatten()
            .flat_map(|&(cell, _)| {
                ["headers", "aria-labelledby"]
                    .into_iter()
                    .filter_map(move |name| page.attr(cell, name))
                    .flat_map(str::split_whitespace)
            })
            .collect();
        let mut lonely = Vec::new();
        for (r, row) in rows.iter().enumerate() {
            for &(cell, column) in row {
                if !is_header(check, cell) || !has_content(check, cell) {
                    continue;
                }
                if page
                    .attr(cell, "id")
                    .is_some_and(|id| referenced.contains(&id))
                {
                    continue;
                }
                let scope = page.attr(cell, "scope").map(str::to_ascii_lowercase);
                let row_header = scope.as_deref() == Some("row")
                    || (scope.is_none()
                        && column == 0
                        && r > 0
                        && row.len() > 1
                        && row.iter().skip(1).all(|&(c, _)| !is_header(check, c)));
                let has_data = if row_header {
                    row.iter().any(|&(c, _)| c != cell && !is_header(check, c))
                } else {
                    rows.iter().skip(r + 1).any(|other| {
                        other
                            .iter()
                            .any(|&(c, col)| col == column && !is_header(check, c))
                    })
                };
                if !has_data {
                    lonely.push(page.selector(cell));
                }
            }
        }
        if lonely.is_empty() {
            check.pass();
        } else {
            check.review(
                table,
                format!(
                    "header cells that head no data cell: {} (add data to their column or \
                     row, or make them <td>)",
                    lonely.join(", ")
                ),
            );
        }
    }
}

/// axe-core's `td-headers-attr`, on the table: every cell's `headers` must name header
/// cells of the same table, and never the cell itself. An empty `headers` makes the
/// table "needs review" when nothing else is wrong.
pub(super) fn td_headers_attr(check: &mut Check<'_, '_>) {
    let page = check.page;
    for table in 0..page.elements.len() {
        if !is_checked_table(check, table) {
            continue;
        }
        let cells: Vec<usize> = grid(check, table)
            .into_iter()
            .flatten()
            .map(|(c, _)| c)
            .collect();
        let header_by_id = |id: &str| {
            cells
                .iter()
                .find(|&&c| page.attr(c, "id") == Some(id))
                .map(|&c| is_header(check, c))
        };
        // In axe-core's order: only the first kind of problem found is reported.
        let (mut outside, mut not_header, mut itself, mut empty) = (vec![], vec![], vec![], vec![]);
        for &cell in &cells {
            let Some(headers) = page.attr(cell, "headers") else {
                continue;
            };
            if page.hidden[cell] {
                continue;
            }
            if headers.trim().is_empty() {
                empty.push(page.selector(cell));
                continue;
            }
            let own_id = page.attr(cell, "id");
            for id in headers.split_whitespace() {
                let problems = match (Some(id) == own_id, header_by_id(id)) {
                    (true, _) => &mut itself,
                    (false, None) => &mut outside,
                    (false, Some(false)) => &mut not_header,
                    (false, Some(true)) => continue,
                };
                problems.push(format!("{} (\"{id}\")", page.selector(cell)));
            }
        }
        let found = [
            (outside, "name cells that are not in this table"),
            (not_header, "name cells that are not header cells"),
            (itself, "name the cell itself"),
        ]
        .into_iter()
        .find(|(cells, _)| !cells.is_empty());
        match found {
            Some((cells, what)) => check.fail(
                table,
                format!("headers attributes that {what}: {}", cells.join(", ")),
            ),
            None if !empty.is_empty() => check.review(
                table,
                format!("empty headers attributes: {}", empty.join(", ")),
            ),
            None => check.pass(),
        }
    }
}

pub(super) fn scope_attr_valid(check: &mut Check<'_, '_>) {
    let page = check.page;
    for i in 0..page.elements.len() {
        let Some(scope) = page.attr(i, "scope") else {
            continue;
        };
        let value = scope.trim().to_ascii_lowercase();
        let valid_value = matches!(value.as_str(), "row" | "col" | "rowgroup" | "colgroup");
        let on_th = page.name(i) == "th";
        check.expect(i, valid_value && on_th, || {
            if !on_th {
                format!(
                    "scope is only meaningful on <th>, not on <{}>",
                    page.name(i)
                )
            } else {
                format!("scope=\"{scope}\" is not one of row, col, rowgroup, colgroup")
            }
        });
    }
}
