//! What an approver may narrow an audit to: the same site from the same page, over no
//! more pages than were asked. An inline page is audited as sent or not at all.

use fundi_runtime::Message;
use serde_json::Value;

use super::{Asking, Source};

impl Asking<'_> {
    /// Whether `narrowed` asks no more of the audit than `original` did.
    pub(in crate::a11y) fn narrowing(
        &self,
        original: &Message,
        narrowed: &Value,
    ) -> Result<(), String> {
        let Source::Site { start, max_pages } = self.source(original).map_err(|e| e.to_string())?
        else {
            return Err(
                "an inline page cannot be narrowed: approve it as sent, or reject it".into(),
            );
        };
        let offered = self.site(narrowed).map_err(|e| e.to_string())?;
        let Source::Site {
            start: offered_start,
            max_pages: offered_pages,
        } = offered
        else {
            return Err("the narrowed input must be {\"url\", \"maxPages\"}".into());
        };
        if offered_start != start {
            return Err(format!(
                "the narrowed input must start from {start}, as asked"
            ));
        }
        if offered_pages > max_pages {
            return Err(format!(
                "maxPages {offered_pages} is more than the {max_pages} asked"
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use fundi_runtime::Part;
    use serde_json::json;

    use super::*;
    use crate::a11y::AuditMode;
    use crate::origins::Origins;

    #[test]
    fn an_audit_narrows_to_fewer_pages_of_the_same_site_only() {
        let origins = Origins::new(&["https://docs.test".to_owned()]);
        let skill = Asking {
            origins: &origins,
            max_pages: 20,
            default_mode: AuditMode::Static,
        };
        let asked = Message::user(vec![Part::data(
            json!({"url": "https://docs.test/", "maxPages": 10}),
        )]);
        assert!(
            skill
                .narrowing(&asked, &json!({"url": "https://docs.test/", "maxPages": 3}))
                .is_ok()
        );
        let more = skill
            .narrowing(
                &asked,
                &json!({"url": "https://docs.test/", "maxPages": 12}),
            )
            .unwrap_err();
        assert!(more.contains("more than the 10 asked"), "{more}");
        let elsewhere = skill
            .narrowing(
                &asked,
                &json!({"url": "https://docs.test/other", "maxPages": 1}),
            )
            .unwrap_err();
        assert!(
            elsewhere.contains("must start from https://docs.test/"),
            "{elsewhere}"
        );
        let inline = Message::user(vec![Part::text("<p>hi</p>").with_media_type("text/html")]);
        assert!(
            skill
                .narrowing(&inline, &json!({}))
                .unwrap_err()
                .contains("inline")
        );
    }
}
