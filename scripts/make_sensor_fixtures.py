#!/usr/bin/env python3
"""Writes data/testdata/uci-har: a UCI HAR "train" split of four windows in the
data set's exact text layout (activity_labels.txt, y_train.txt, and nine
'Inertial Signals' files of 128 numbers a line printed as %.7e with a
three-digit exponent, two spaces before a positive number, one before a
negative). Value (si+1)*0.01*(i+1)*sin(0.1*t+si), rounded to 7 decimals, for
signal si, window i, step t: data/sensor_test.go recomputes it (ucihar).
The WISDM and CSV fixtures are small enough to be written by hand."""
import math, os

SIGS = ["total_acc_x", "total_acc_y", "total_acc_z", "body_acc_x", "body_acc_y",
        "body_acc_z", "body_gyro_x", "body_gyro_y", "body_gyro_z"]


def fmt(v):
    m, e = ('%.7e' % v).split('e')
    s = '%se%s%03d' % (m, '-' if int(e) < 0 else '+', abs(int(e)))
    return ('  ' if v >= 0 else ' ') + s


root = os.path.join(os.path.dirname(__file__), '..', 'data', 'testdata', 'uci-har')
os.makedirs(os.path.join(root, 'train', 'Inertial Signals'), exist_ok=True)
with open(os.path.join(root, 'activity_labels.txt'), 'w') as f:
    f.write("1 WALKING\n2 WALKING_UPSTAIRS\n3 WALKING_DOWNSTAIRS\n4 SITTING\n5 STANDING\n6 LAYING\n")
with open(os.path.join(root, 'train', 'y_train.txt'), 'w') as f:
    f.write("5\n5\n1\n4\n")
for si, s in enumerate(SIGS):
    with open(os.path.join(root, 'train', 'Inertial Signals', '%s_train.txt' % s), 'w') as f:
        for i in range(4):
            f.write(''.join(fmt(round((si + 1) * 0.01 * (i + 1) * math.sin(0.1 * t + si), 7))
                            for t in range(128)) + '\n')
