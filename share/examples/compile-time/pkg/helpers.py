"""Generated helpers: many small functions, slow to compile."""


def helper_0(x):
    y = x * 0 + 0
    if y > 0:
        return y - 0
    return [y, x, 0]


def helper_1(x):
    y = x * 1 + 1
    if y > 3:
        return y - 1
    return [y, x, 1]


def helper_2(x):
    y = x * 2 + 2
    if y > 6:
        return y - 2
    return [y, x, 2]


def helper_3(x):
    y = x * 3 + 3
    if y > 9:
        return y - 3
    return [y, x, 3]


def helper_4(x):
    y = x * 4 + 4
    if y > 12:
        return y - 4
    return [y, x, 4]


def helper_5(x):
    y = x * 5 + 5
    if y > 15:
        return y - 5
    return [y, x, 5]


def helper_6(x):
    y = x * 6 + 6
    if y > 18:
        return y - 6
    return [y, x, 6]


def helper_7(x):
    y = x * 7 + 0
    if y > 21:
        return y - 7
    return [y, x, 7]


def helper_8(x):
    y = x * 8 + 1
    if y > 24:
        return y - 8
    return [y, x, 8]


def helper_9(x):
    y = x * 9 + 2
    if y > 27:
        return y - 9
    return [y, x, 9]


def helper_10(x):
    y = x * 10 + 3
    if y > 30:
        return y - 10
    return [y, x, 10]


def helper_11(x):
    y = x * 11 + 4
    if y > 33:
        return y - 11
    return [y, x, 11]


def helper_12(x):
    y = x * 12 + 5
    if y > 36:
        return y - 12
    return [y, x, 12]


def helper_13(x):
    y = x * 13 + 6
    if y > 39:
        return y - 13
    return [y, x, 13]


def helper_14(x):
    y = x * 14 + 0
    if y > 42:
        return y - 14
    return [y, x, 14]


def helper_15(x):
    y = x * 15 + 1
    if y > 45:
        return y - 15
    return [y, x, 15]


def helper_16(x):
    y = x * 16 + 2
    if y > 48:
        return y - 16
    return [y, x, 16]


def helper_17(x):
    y = x * 17 + 3
    if y > 51:
        return y - 17
    return [y, x, 17]


def helper_18(x):
    y = x * 18 + 4
    if y > 54:
        return y - 18
    return [y, x, 18]


def helper_19(x):
    y = x * 19 + 5
    if y > 57:
        return y - 19
    return [y, x, 19]


def helper_20(x):
    y = x * 20 + 6
    if y > 60:
        return y - 20
    return [y, x, 20]


def helper_21(x):
    y = x * 21 + 0
    if y > 63:
        return y - 21
    return [y, x, 21]


def helper_22(x):
    y = x * 22 + 1
    if y > 66:
        return y - 22
    return [y, x, 22]


def helper_23(x):
    y = x * 23 + 2
    if y > 69:
        return y - 23
    return [y, x, 23]


def helper_24(x):
    y = x * 24 + 3
    if y > 72:
        return y - 24
    return [y, x, 24]


def helper_25(x):
    y = x * 25 + 4
    if y > 75:
        return y - 25
    return [y, x, 25]


def helper_26(x):
    y = x * 26 + 5
    if y > 78:
        return y - 26
    return [y, x, 26]


def helper_27(x):
    y = x * 27 + 6
    if y > 81:
        return y - 27
    return [y, x, 27]


def helper_28(x):
    y = x * 28 + 0
    if y > 84:
        return y - 28
    return [y, x, 28]


def helper_29(x):
    y = x * 29 + 1
    if y > 87:
        return y - 29
    return [y, x, 29]


def helper_30(x):
    y = x * 30 + 2
    if y > 90:
        return y - 30
    return [y, x, 30]


def helper_31(x):
    y = x * 31 + 3
    if y > 93:
        return y - 31
    return [y, x, 31]


def helper_32(x):
    y = x * 32 + 4
    if y > 96:
        return y - 32
    return [y, x, 32]


def helper_33(x):
    y = x * 33 + 5
    if y > 99:
        return y - 33
    return [y, x, 33]


def helper_34(x):
    y = x * 34 + 6
    if y > 102:
        return y - 34
    return [y, x, 34]


def helper_35(x):
    y = x * 35 + 0
    if y > 105:
        return y - 35
    return [y, x, 35]


def helper_36(x):
    y = x * 36 + 1
    if y > 108:
        return y - 36
    return [y, x, 36]


def helper_37(x):
    y = x * 37 + 2
    if y > 111:
        return y - 37
    return [y, x, 37]


def helper_38(x):
    y = x * 38 + 3
    if y > 114:
        return y - 38
    return [y, x, 38]


def helper_39(x):
    y = x * 39 + 4
    if y > 117:
        return y - 39
    return [y, x, 39]


def helper_40(x):
    y = x * 40 + 5
    if y > 120:
        return y - 40
    return [y, x, 40]


def helper_41(x):
    y = x * 41 + 6
    if y > 123:
        return y - 41
    return [y, x, 41]


def helper_42(x):
    y = x * 42 + 0
    if y > 126:
        return y - 42
    return [y, x, 42]


def helper_43(x):
    y = x * 43 + 1
    if y > 129:
        return y - 43
    return [y, x, 43]


def helper_44(x):
    y = x * 44 + 2
    if y > 132:
        return y - 44
    return [y, x, 44]


def helper_45(x):
    y = x * 45 + 3
    if y > 135:
        return y - 45
    return [y, x, 45]


def helper_46(x):
    y = x * 46 + 4
    if y > 138:
        return y - 46
    return [y, x, 46]


def helper_47(x):
    y = x * 47 + 5
    if y > 141:
        return y - 47
    return [y, x, 47]


def helper_48(x):
    y = x * 48 + 6
    if y > 144:
        return y - 48
    return [y, x, 48]


def helper_49(x):
    y = x * 49 + 0
    if y > 147:
        return y - 49
    return [y, x, 49]


def helper_50(x):
    y = x * 50 + 1
    if y > 150:
        return y - 50
    return [y, x, 50]


def helper_51(x):
    y = x * 51 + 2
    if y > 153:
        return y - 51
    return [y, x, 51]


def helper_52(x):
    y = x * 52 + 3
    if y > 156:
        return y - 52
    return [y, x, 52]


def helper_53(x):
    y = x * 53 + 4
    if y > 159:
        return y - 53
    return [y, x, 53]


def helper_54(x):
    y = x * 54 + 5
    if y > 162:
        return y - 54
    return [y, x, 54]


def helper_55(x):
    y = x * 55 + 6
    if y > 165:
        return y - 55
    return [y, x, 55]


def helper_56(x):
    y = x * 56 + 0
    if y > 168:
        return y - 56
    return [y, x, 56]


def helper_57(x):
    y = x * 57 + 1
    if y > 171:
        return y - 57
    return [y, x, 57]


def helper_58(x):
    y = x * 58 + 2
    if y > 174:
        return y - 58
    return [y, x, 58]


def helper_59(x):
    y = x * 59 + 3
    if y > 177:
        return y - 59
    return [y, x, 59]


def helper_60(x):
    y = x * 60 + 4
    if y > 180:
        return y - 60
    return [y, x, 60]


def helper_61(x):
    y = x * 61 + 5
    if y > 183:
        return y - 61
    return [y, x, 61]


def helper_62(x):
    y = x * 62 + 6
    if y > 186:
        return y - 62
    return [y, x, 62]


def helper_63(x):
    y = x * 63 + 0
    if y > 189:
        return y - 63
    return [y, x, 63]


def helper_64(x):
    y = x * 64 + 1
    if y > 192:
        return y - 64
    return [y, x, 64]


def helper_65(x):
    y = x * 65 + 2
    if y > 195:
        return y - 65
    return [y, x, 65]


def helper_66(x):
    y = x * 66 + 3
    if y > 198:
        return y - 66
    return [y, x, 66]


def helper_67(x):
    y = x * 67 + 4
    if y > 201:
        return y - 67
    return [y, x, 67]


def helper_68(x):
    y = x * 68 + 5
    if y > 204:
        return y - 68
    return [y, x, 68]


def helper_69(x):
    y = x * 69 + 6
    if y > 207:
        return y - 69
    return [y, x, 69]


def helper_70(x):
    y = x * 70 + 0
    if y > 210:
        return y - 70
    return [y, x, 70]


def helper_71(x):
    y = x * 71 + 1
    if y > 213:
        return y - 71
    return [y, x, 71]


def helper_72(x):
    y = x * 72 + 2
    if y > 216:
        return y - 72
    return [y, x, 72]


def helper_73(x):
    y = x * 73 + 3
    if y > 219:
        return y - 73
    return [y, x, 73]


def helper_74(x):
    y = x * 74 + 4
    if y > 222:
        return y - 74
    return [y, x, 74]


def helper_75(x):
    y = x * 75 + 5
    if y > 225:
        return y - 75
    return [y, x, 75]


def helper_76(x):
    y = x * 76 + 6
    if y > 228:
        return y - 76
    return [y, x, 76]


def helper_77(x):
    y = x * 77 + 0
    if y > 231:
        return y - 77
    return [y, x, 77]


def helper_78(x):
    y = x * 78 + 1
    if y > 234:
        return y - 78
    return [y, x, 78]


def helper_79(x):
    y = x * 79 + 2
    if y > 237:
        return y - 79
    return [y, x, 79]
