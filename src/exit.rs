//! The process exit status: what each command promises (README "Exit codes"), as a type, so no
//! command returns a bare 0/1/2.

/// How a command ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    /// 0: success (`check`: nothing at or above `--fail-on`; `compare`: no drift;
    /// `diagnose`: a confirmed diagnosis; the other commands: done).
    Success,
    /// 1: `check`: findings at or above `--fail-on`; `compare`: drift; `diagnose`: only
    /// plausible diagnoses or none.
    Found,
    /// 2: envdoctor could not do its job (bad arguments or input), or `check` ran incompletely.
    Trouble,
    /// `envdoctor run -- CMD` passes the command's own status on (126/127 when it cannot start),
    /// and the hidden child subcommands report theirs.
    Passed(i32),
}

impl Exit {
    /// The status the process exits with.
    pub fn code(self) -> i32 {
        match self {
            Exit::Success => 0,
            Exit::Found => 1,
            Exit::Trouble => 2,
            Exit::Passed(c) => c,
        }
    }

    /// `Found` when `found`, else `Success`.
    pub fn found_if(found: bool) -> Exit {
        if found {
            Exit::Found
        } else {
            Exit::Success
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_the_documented_ones() {
        assert_eq!(Exit::Success.code(), 0);
        assert_eq!(Exit::Found.code(), 1);
        assert_eq!(Exit::Trouble.code(), 2);
        assert_eq!(Exit::Passed(127).code(), 127);
        assert_eq!(Exit::found_if(true), Exit::Found);
        assert_eq!(Exit::found_if(false), Exit::Success);
    }
}
