//! The two credentials every call to fundi carries: the client application's bearer
//! token and the end user's token, in the header the server names.

/// The two credentials of a call.
#[derive(Clone)]
pub struct Credentials {
    /// The client application's bearer token.
    pub token: String,
    /// The end user's token.
    pub user_token: String,
    /// The header carrying the user's token.
    pub user_header: String,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("user_header", &self.user_header)
            .finish_non_exhaustive()
    }
}

impl Credentials {
    /// `token` and `user_token`, the user's in fundi's default header
    /// (`X-Fundi-User-Token`).
    pub fn new(token: impl Into<String>, user_token: impl Into<String>) -> Credentials {
        Credentials {
            token: token.into(),
            user_token: user_token.into(),
            user_header: DEFAULT_USER_HEADER.into(),
        }
    }

    /// The same credentials, the user's token in `header`.
    pub fn in_header(mut self, header: impl Into<String>) -> Credentials {
        self.user_header = header.into();
        self
    }
}

/// The header a fundi server reads the user's token from unless configured otherwise.
pub const DEFAULT_USER_HEADER: &str = "X-Fundi-User-Token";
