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

pub(super) fn th_has_data_cells(check: &mut Check<'_, '_>) {
    let page = check.page;
    for table in 0..page.elements.len() {
        if page.name(table) != "table" || page.hidden[table] {
            continue;
        }
        let presentational = page
            .attr_text(table, "role")
            .is_some_and(|r| matches!(r, "none" | "presentation"));
        if presentational {
            continue;
        }
        let rows = grid(check, table);
        for (r, row) in rows.iter().enumerate() {
            for &(cell, column) in row {
                if page.name(cell) != "th" || !has_content(check, cell) {
                    continue;
                }
                let scope = page.attr(cell, "scope").map(str::to_ascii_lowercase);
                let row_header = scope.as_deref() == Some("row")
                    || (scope.is_none()
                        && column == 0
                        && r > 0
                        && row.len() > 1
                        && row.iter().skip(1).all(|&(c, _)| page.name(c) == "td"));
                let has_data = if row_header {
                    row.iter()
                        .any(|&(c, _)| page.name(c) == "td" && has_content(check, c))
                } else {
                    rows.iter().skip(r + 1).any(|other| {
                        other.iter().any(|&(c, col)| {
                            col == column && page.name(c) == "td" && has_content(check, c)
                        })
                    })
                };
                check.expect(cell, has_data, || {
                    "this header cell heads no data cell: add data to its column (or row), or \
                     make the cell a <td>"
                        .into()
                });
            }
        }
    }
}

pub(super) fn td_headers_attr(check: &mut Check<'_, '_>) {
    let page = check.page;
    for cell in 0..page.elements.len() {
        if !matches!(page.name(cell), "td" | "th") {
            continue;
        }
        let Some(headers) = page.attr_text(cell, "headers") else {
            continue;
        };
        let table = page.ancestors(cell).find(|&a| page.name(a) == "table");
        let own_id = page.attr(cell, "id");
        let mut problems = Vec::new();
        for id in headers.split_whitespace() {
            if Some(id) == own_id {
                problems.push(format!("\"{id}\" is the cell itself"));
                continue;
            }
            let target = page.by_id(id);
            let same_table = target.is_some_and(|t| {
                matches!(page.name(t), "td" | "th")
                    && page.ancestors(t).find(|&a| page.name(a) == "table") == table
            });
            if !same_table {
                problems.push(format!("\"{id}\" is not a cell of the same table"));
            }
        }
        let ok = problems.is_empty();
        check.expect(cell, ok, || {
            format!(
                "headers refers to cells it may not: {}",
                problems.join(", ")
            )
        });
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
