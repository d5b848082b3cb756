//! Where a scan's probes go: the origin the scan landed on. A user types
//! `http://host/` and the site lives on `https://host/`; the entry origin then answers
//! every path with a redirect, and probing it finds nothing. The probes (the error page,
//! and the active checks) go to the origin the entry path landed on, and to the entry
//! origin too when it served some page itself.

use reqwest::Url;

use super::http::Response;

/// The origins to probe, as base URLs (`scheme://host:port/`), the landed one first.
pub(super) fn probe_bases(entry: &Url, pages: &[Response]) -> Vec<Url> {
    let entry_base = base_of(entry);
    let landed = pages
        .first()
        .map(|p| base_of(&p.url))
        .unwrap_or_else(|| entry_base.clone());
    let mut bases = vec![landed];
    let entry_serves = pages.iter().any(|p| base_of(&p.url) == entry_base);
    if entry_serves && !bases.contains(&entry_base) {
        bases.push(entry_base);
    }
    bases
}

/// `paths` (URLs on the entry origin) on `base`'s origin instead.
pub(super) fn rebased(paths: &[Url], base: &Url) -> Vec<Url> {
    paths
        .iter()
        .filter_map(|path| {
            let mut moved = base.join(path.path()).ok()?;
            moved.set_query(path.query());
            Some(moved)
        })
        .collect()
}

/// The origin of `url` as a base URL.
fn base_of(url: &Url) -> Url {
    let mut base = url.clone();
    base.set_path("/");
    base.set_query(None);
    base.set_fragment(None);
    base
}

#[cfg(test)]
mod tests {
    use reqwest::header::HeaderMap;

    use super::*;

    fn page(url: &str) -> Response {
        Response {
            url: Url::parse(url).unwrap(),
            status: 200,
            headers: HeaderMap::new(),
            body: Vec::new(),
        }
    }

    #[test]
    fn the_probes_go_where_the_scan_landed_and_to_the_entry_only_if_it_serves() {
        let entry = Url::parse("http://host.test/login?x=1").unwrap();
        let landed = [page("https://host.test/login?x=1")];
        let bases = probe_bases(&entry, &landed);
        assert_eq!(bases, [Url::parse("https://host.test/").unwrap()]);
        let both = [page("https://host.test/"), page("http://host.test/old")];
        assert_eq!(probe_bases(&entry, &both).len(), 2);
        let stayed = [page("http://host.test/")];
        assert_eq!(
            probe_bases(&entry, &stayed),
            [Url::parse("http://host.test/").unwrap()]
        );
        let moved = rebased(&[entry], &bases[0]);
        assert_eq!(moved[0].as_str(), "https://host.test/login?x=1");
    }
}
