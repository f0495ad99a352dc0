package sandbox

// bulkPerl is the bulk scripts' fast path: the per-member work of a batch in
// one perl process, where the bash fallback needs a process per run of
// members and loops that bash runs slowly. perl is not promised by the
// sandbox image (bash and GNU coreutils are), but perl-base is Essential in
// Debian, so it is there in every Debian-based image; bulkLib uses it when
// `command -v perl` finds it and otherwise runs the same steps in bash. The
// tests run every case on both engines.
//
// It is run as `perl -e PROG -- ACTION MANIFEST N START` with the PERL*
// variables that change how perl loads code or decodes bytes unset, and
// reads every file :raw, so no byte of a path is reinterpreted. It uses
// nothing but builtins (no module beyond strict). Its verdict is the exit
// code plus one line `INDEX<TAB>STRERROR` on stdout; bulkLib turns it into
// the fault protocol's marker, re-asking ShellLib's functions about the
// member wherever they can name the failure more precisely.
//
//   - prepare: refuse a parent chain holding a non-directory (exit 6, the
//     lowest such member), create every parent (exit 7) and every staging
//     directory (exit 8).
//   - land: check that every temporary file arrived (from START 0; exit 4,
//     the first missing member), then land the members from START in order:
//     a directory target (exit 5) stops the run; the temporary file takes an
//     existing regular target's mode, else 0644, and the current time unless
//     tar -m already gave it one (the archive's entries carry the epoch), and
//     is renamed onto the target (a failure: exit 5). Success removes the
//     then empty staging directories. A member costs four system calls
//     (five on Docker, whose daemon keeps the archive's mtime).
//   - shed: remove every staging directory of the well-formed part of the
//     manifest with what is in it (a symlink put in a staging directory's
//     place is removed, never followed).
//
// Exit 3: the manifest is missing or not what the plan wrote. The manifest
// checks are the same as __sgb_load's. The program holds no single quote:
// bulkLib keeps it in a single-quoted word.
const bulkPerl = `use strict;
my ($act, $mf, $n, $start) = @ARGV;
my (@s, @t, @stage, @first);

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
		my ($sd, $sb) = $s =~ m{\A(.*)/([^/]+)\z}s;
		my ($td, $tb) = $t =~ m{\A(/.*|)/([^/]+)\z}s;
		last unless defined $sb && defined $tb && $sb eq $tb;
		my ($pd, $sn) = $sd =~ m{\A(.*)/([^/]+)\z}s;
		last unless defined $sn && $pd eq $td && $sn =~ /\A\.sandgate-write-[0-9a-f]{16}\z/;
		push @s, $s;
		push @t, $t;
		if (!@stage || $stage[-1] ne $sd) {
			push @stage, $sd;
			push @first, $i / 2;
		}
	}
	return $whole && @t == $n;
}

sub verdict {
	my ($code, $i, $why) = @_;
	print "$i\t$why\n";
	exit $code;
}

sub dirof {
	my $p = shift;
	$p =~ s{/[^/]*\z}{}s;
	return $p eq "" ? "/" : $p;
}

sub blocked {
	my $p = "";
	for my $c (grep { $_ ne "" } split m{/}, shift) {
		$p .= "/$c";
		next if -d $p;
		return -e $p || -l $p;
	}
	return 0;
}

sub mkpath {
	my $p = "";
	for my $c (grep { $_ ne "" } split m{/}, shift) {
		$p .= "/$c";
		next if -d $p;
		next if mkdir $p, 0777;
		my $e = $!;
		next if -d $p;
		$! = $e;
		return 0;
	}
	return 1;
}

if ($act eq "prepare") {
	load() or exit 3;
	my (%first_of, @dirs, %bad);
	for my $i (0 .. $#t) {
		my $d = dirof($t[$i]);
		next if exists $first_of{$d};
		$first_of{$d} = $i;
		push @dirs, $d;
	}
	for my $d (@dirs) {
		$bad{$d} = 1 if blocked($d);
	}
	if (%bad) {
		for my $i (0 .. $#t) {
			verdict(6, $i, "Not a directory") if $bad{dirof($t[$i])};
		}
	}
	for my $d (@dirs) {
		mkpath($d) or verdict(7, $first_of{$d}, "$!");
	}
	for my $k (0 .. $#stage) {
		mkdir $stage[$k], 0777 or verdict(8, $first[$k], "$!");
	}
	exit 0;
}

if ($act eq "land") {
	load() or exit 3;
	my @mtime;
	for my $i ($start .. $#s) {
		my @st = stat $s[$i];
		verdict(4, $i, "temporary file missing") unless @st && -f _;
		$mtime[$i] = $st[9];
		last if $start > 0;
	}
	for my $i ($start .. $#s) {
		my ($s, $t) = ($s[$i], $t[$i]);
		my $mode = 0644;
		if (my @st = lstat $t) {
			my ($reg, $link, $dir) = (-f _, -l _, -d _);
			verdict(5, $i, "Is a directory") if $dir || ($link && -d $t);
			$mode = $st[2] & 07777 if $reg;
		}
		chmod $mode, $s or verdict(5, $i, "$!");
		utime undef, undef, $s if !defined $mtime[$i] || $mtime[$i] == 0;
		rename $s, $t or verdict(5, $i, "$!");
	}
	rmdir $_ for @stage;
	exit 0;
}

if ($act eq "shed") {
	load();
	for my $d (@stage) {
		if (-l $d) {
			unlink $d;
			next;
		}
		if (opendir my $dh, $d) {
			for my $e (readdir $dh) {
				unlink "$d/$e" unless $e eq "." || $e eq "..";
			}
			closedir $dh;
		}
		rmdir $d;
	}
	exit 0;
}
exit 2;
`
