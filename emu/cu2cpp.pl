#!/usr/bin/perl
# emu/cu2cpp.pl IN.cu OUT.cpp: a CUDA source rewritten into C++ for the emulator.
#
# Only what C++ cannot parse or what the emulator must see is rewritten; everything else
# stays as it is, and the source file itself stays real CUDA that nvcc compiles unchanged.
# Lines keep their numbers (a #line names the original file by its full path), so the
# compiler's messages and the emulator's reports point into the .cu file; launch sites
# name it by SHOWN-PATH (relative to the project).
#   K<<<grid, block, smem, stream>>>(args...)
#       -> plm_emu::launch(plm_emu::launch_site{"K", address of K, "file:line"},
#                          plm_emu::config(grid, block, smem, stream),
#                          [=](auto &&...a) { K(a...); }, args...)
#      The arguments are evaluated once, at the launch, and copied, as CUDA does; a template
#      kernel deduces its arguments as at a launch. The address (for the kernel's attributes)
#      is null where K names a template whose arguments the launch deduces.
#   extern __shared__ [__align__(n)] T name[];
#       -> T *name = (T *)plm_emu::dynamic_shared(n);
#   __shared__ [__align__(n)] T name[dims];
#       -> static char tag; auto &name = plm_emu::static_shared<T[dims]>(&tag, "name", n);
#      so that shared memory is the block's own (several blocks run at once), poisoned when
#      a block starts, and checked for races and reads before writes like dynamic memory.
use strict;
use warnings;

die "usage: cu2cpp.pl IN.cu OUT.cpp [SHOWN-PATH]\n" unless @ARGV >= 2;
my ($in, $out, $shown) = @ARGV;
$shown //= $in;
open(my $fh, '<', $in) or die "cu2cpp.pl: cannot read $in: $!\n";
my $src = do { local $/; <$fh> };
close $fh;

# The line breaks in text a rewrite drops, to be written after its replacement: the same
# number, with their backslashes inside a macro, so lines keep their numbers.
sub breaks_of {
  my ($text) = @_;
  my $breaks = '';
  $breaks .= $1 while $text =~ /(\\?\n)/g;
  return $breaks;
}

# Template kernels defined in this file: a launch that names one without its arguments
# has them deduced, and its address cannot be taken.
my %template_kernel;
while ($src =~ /template\s*<(?:[^<>]|<[^<>]*>)*>\s*__global__\s+void\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?(\w+)\s*\(/g) {
  $template_kernel{$1} = 1;
}

my $parens = qr/(\((?:[^()]++|(?-1))*+\))/;
my $name = qr/[A-Za-z_][\w:]*(?:<(?:[^<>;()]|<[^<>;()]*>)*>)?/;

# Launches.
my $launches = 0;
$src =~ s{($name)(\s*(?:\\\s*)*)<<<((?:(?!>>>).)*?)>>>(\s*)($parens)}{
  my ($kernel, $gap, $config, $gap2, $args) = ($1, $2, $3, $4, $5);
  $launches++;
  my $line = 1 + (() = substr($src, 0, $-[0]) =~ /\n/g);
  $args =~ s/^\(//;
  $args =~ s/\)$//;
  my $address = ($kernel =~ /^\w+$/ && $template_kernel{$kernel}) ? 'nullptr' : "(const void *)($kernel)";
  my $comma = $args =~ /\S/ ? ', ' : '';
  (my $config_flat = $config) =~ s/\\?\n/ /g;
  "plm_emu::launch(plm_emu::launch_site{\"$kernel\", $address, \"$shown:$line\"}, "
    . "plm_emu::config($config_flat), [=](auto &&...plm_emu_args) { $kernel(plm_emu_args...); }$comma$args)"
    . breaks_of($gap . $config . $gap2)
}gse;

# Dynamic shared memory.
$src =~ s{extern\s+__shared__\s+(?:__align__\s*\(\s*(\d+)\s*\)\s+)?([\w\s:<>,]+?)\s+(\w+)\s*\[\s*\]\s*;}{
  my ($align, $type, $var) = ($1 // 0, $2, $3);
  my $all = $&;
  "$type *$var = ($type *)plm_emu::dynamic_shared($align);" . breaks_of($all)
}gse;

# Static shared memory (after the dynamic declarations, which no longer say __shared__).
$src =~ s{(?<![\w#])__shared__\s+(?:__align__\s*\(\s*([^()]*)\s*\)\s*)?((?:(?!__shared__)[^;{}=()])+?)\s+(\w+)\s*((?:\[[^\]]*\]\s*)*);}{
  my ($align, $type, $var, $dims) = ($1 // 0, $2, $3, $4);
  my $all = $&;
  $type =~ s/\s+/ /g;
  (my $dims_wrapped = $dims) =~ s/\[([^\]]*)\]\s*/"[(" . join(' ', split(m{\s+}, $1)) . ")]"/ge;
  "static char plm_emu_shared_$var; auto &$var = plm_emu::static_shared<$type$dims_wrapped>("
    . "&plm_emu_shared_$var, \"$var\", $align);" . breaks_of($all)
}gse;

die "cu2cpp.pl: $in: a __shared__ declaration was not understood\n"
  if $src =~ /(?<![\w#"])__shared__(?!\w)/ && $src !~ /^\s*#\s*define\s+\w*__shared__/m;

(my $out_dir = $out) =~ s{/[^/]*$}{};
if ($out_dir ne $out && !-d $out_dir) {
  require File::Path;
  File::Path::make_path($out_dir);
}
open(my $ofh, '>', $out) or die "cu2cpp.pl: cannot write $out: $!\n";
# The original file by its full path, so debuggers and symbolizers find it; launch sites
# say the shown (relative) path.
require Cwd;
my $full = Cwd::abs_path($in) // $in;
print $ofh "#line 1 \"$full\"\n", $src;
close $ofh or die "cu2cpp.pl: writing $out: $!\n";
