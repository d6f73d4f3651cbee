# GFR_FEATURE(NAME, DEFAULT, HELP)
# Declares the configure switch --enable-NAME / --disable-NAME once, with its
# default, and records it for the summary printed at the end of configure.
# Sets gfr_feature_NAME (with '-' turned into '_') to "yes" or "no".
AC_DEFUN([GFR_FEATURE], [
	AC_ARG_ENABLE([$1],
		[AS_HELP_STRING([--]m4_if([$2], [yes], [disable], [enable])[-$1], [$3 (default: $2)])],
		[AS_CASE([$enableval],
			[yes|no], [gfr_feature_[]m4_translit([$1], [-], [_])=$enableval],
			[AC_MSG_ERROR([--enable-$1 takes yes or no, not '$enableval'])])],
		[gfr_feature_[]m4_translit([$1], [-], [_])=$2])
])

# GFR_SUMMARY_ITEM(LABEL, VALUE): one aligned line of the configure summary.
AC_DEFUN([GFR_SUMMARY_ITEM], [
	AS_ECHO_N(["  $1"]); gfr_pad=$(expr 34 - $(printf '%s' "$1" | wc -c)); printf '%*s' "$gfr_pad" ''; AS_ECHO(["$2"])
])
