//! The presets' names and aliases, and [`PresetNames`], the list a message prints: a leaf
//! (it names no [`Layout`](super::Layout)), so [`ParseError`](crate::ParseError), below
//! every layout, can list the presets in its message.

/// A preset's name and the other names accepted for it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Names {
    /// The name the layout string and `--layout` accept.
    pub(crate) name: &'static str,
    /// Other names accepted for it.
    pub(crate) aliases: &'static [&'static str],
}

pub(crate) const SNOWFLAKE: Names = Names {
    name: "snowflake",
    aliases: &["twitter"],
};
pub(crate) const SONYFLAKE: Names = Names {
    name: "sonyflake",
    aliases: &["sonyflake-v2"],
};
pub(crate) const SONYFLAKE_V1: Names = Names {
    name: "sonyflake-v1",
    aliases: &[],
};
pub(crate) const DISCORD: Names = Names {
    name: "discord",
    aliases: &[],
};
pub(crate) const INSTAGRAM: Names = Names {
    name: "instagram",
    aliases: &[],
};
pub(crate) const MASTODON: Names = Names {
    name: "mastodon",
    aliases: &[],
};
pub(crate) const JS_SAFE: Names = Names {
    name: "js-safe",
    aliases: &["javascript-safe"],
};

/// Every preset's names, in the order [`Layout::presets`](super::Layout::presets) lists them.
pub(crate) const ALL: [Names; 7] = [
    SNOWFLAKE,
    SONYFLAKE,
    SONYFLAKE_V1,
    DISCORD,
    INSTAGRAM,
    MASTODON,
    JS_SAFE,
];

/// The presets' names as a message lists them: `snowflake (or twitter), sonyflake (or
/// sonyflake-v2), ...`, the names of [`Layout::presets`](super::Layout::presets). Its `Display` allocates nothing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PresetNames;

impl core::fmt::Display for PresetNames {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        for (i, p) in ALL.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            f.write_str(p.name)?;
            for (j, alias) in p.aliases.iter().enumerate() {
                f.write_str(if j == 0 { " (or " } else { ", " })?;
                f.write_str(alias)?;
            }
            if !p.aliases.is_empty() {
                f.write_str(")")?;
            }
        }
        Ok(())
    }
}
