# The sample project for minimake: a tiny "build" with shell commands.
# Commands write into the current directory (the demo runs it in a folder
# of the build tree); words.txt is a leaf, an input file copied there first.
#
#   gen_a  gen_b  words.txt
#     |      |        |
#    a.o    b.o    words.o      (each "compile" sleeps a little, so the
#       \    |     /             three run side by side with -j 3)
#          app
#        /     \
#    report    check
#        \     /
#          all                   (no commands: a join point)

all: report check

gen_a:
	printf 'pear\napple\n' > a.src
gen_b:
	printf 'plum\nfig\n' > b.src

a.o: gen_a
	sleep 0.05
	sort a.src > a.o
b.o: gen_b
	sleep 0.05
	sort b.src > b.o
words.o: words.txt
	sleep 0.05
	sort words.txt > words.o

app: a.o b.o words.o
	sort a.o b.o words.o > app

report: app
	echo "app has $(wc -l < app) lines, first $(head -n 1 app)" > report
	cat report
check: app
	grep -qx fig app
	echo "check: ok"
