#!/usr/bin/perl
# bulk.pl: the bulk land step's fast path: the per-member work of a batch in one
# perl process, where the bash fallback needs a process per member (mv) and
# loops that bash runs slowly. perl is not promised by the sandbox image (bash
# and GNU coreutils are), but perl-base is Essential in Debian, so it is there
# in every Debian-based image; bulk.sh uses it when `command -v perl` finds it
# and otherwise lands the members with bash. The tests run every case on both
# engines.
#
# It is run as `perl -e PROG -- MANIFEST DIRLIST N START` with the PERL*
# variables that change how perl loads code or decodes bytes unset, and reads
# every file :raw, so no byte of a path is reinterpreted. It uses nothing but
# builtins (no module beyond strict). Its verdict is the exit code plus, for 4
# and 5, one line `INDEX<TAB>STRERROR` on stdout; bulk.sh turns it into the
# fault protocol's marker, re-asking lib.sh's functions about the member
# wherever they can name the failure more precisely.
#
# From START 0 it first checks that every temporary file arrived as a regular
# file (exit 4, the first missing member), keeping each one's mode. Then it
# lands the members from START in order: a directory target, or a symlink to
# one, stops the run (exit 5); the temporary file takes an existing regular
# target's mode, else 0644 (a chmod only when the archive did not already give
# it that mode) and is renamed onto the target (a failure: exit 5). Success
# removes the manifest and the dir list. A member costs three system calls
# (lstat of the temporary file, lstat of the target, rename); its mtime is the
# archive's (the plan's clock).
#
# Exit 3: the manifest is missing or not what the plan wrote. The manifest
# checks are the same as __sgb_load's: every temporary file is a
# .sandgate-write-<16 hex> name in its target's own directory. The program
# (comments aside: they are stripped) holds no single quote: bulk.sh keeps it in
# a single-quoted word.
use strict;
my ($mf, $dl, $n, $start) = @ARGV;
my (@s, @t);

# load: read the manifest into @s/@t; true when it holds exactly N well-formed
# pairs.
sub load {
	my $fh;
	open($fh, "<:raw", $mf) or return 0;
	local $/;
	my $raw = <$fh>;
	close $fh;
	my @m = split /\0/, (defined $raw ? $raw : ""), -1;
	my $whole = (@m == 2 * $n + 1 && $m[-1] eq "");
	for (my $i = 0; $i + 1 < @m; $i += 2) {
		my ($s, $t) = @m[$i, $i + 1];
		my ($k, $j) = (rindex($s, "/"), rindex($t, "/"));
		last unless $k >= 0 && substr($t, 0, 1) eq "/" && $j < length($t) - 1
			&& substr($s, 0, $k) eq substr($t, 0, $j)
			&& substr($s, $k + 1) =~ /\A\.sandgate-write-[0-9a-f]{16}\z/;
		push @s, $s;
		push @t, $t;
	}
	return $whole && @t == $n;
}

# verdict CODE INDEX WHY: print INDEX<TAB>WHY and exit CODE.
sub verdict {
	my ($code, $i, $why) = @_;
	print "$i\t$why\n";
	exit $code;
}

load() or exit 3;
my @mode;
if ($start == 0) {
	for my $i (0 .. $#s) {
		my @st = lstat $s[$i];
		verdict(4, $i, "temporary file missing") unless @st && -f _;
		$mode[$i] = $st[2] & 07777;
	}
}
for my $i ($start .. $#s) {
	my ($s, $t) = ($s[$i], $t[$i]);
	my $want = 0644;
	if (my @st = lstat $t) {
		my ($reg, $link, $dir) = (-f _, -l _, -d _);
		verdict(5, $i, "Is a directory") if $dir || ($link && -d $t);
		$want = $st[2] & 07777 if $reg;
	}
	if (!defined $mode[$i] || $mode[$i] != $want) {
		chmod $want, $s or verdict(5, $i, "$!");
	}
	rename $s, $t or verdict(5, $i, "$!");
}
unlink $mf, $dl;
exit 0;
