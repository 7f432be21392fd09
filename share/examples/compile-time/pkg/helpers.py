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


def helper_80(x):
    y = x * 80 + 3
    if y > 240:
        return y - 80
    return [y, x, 80]


def helper_81(x):
    y = x * 81 + 4
    if y > 243:
        return y - 81
    return [y, x, 81]


def helper_82(x):
    y = x * 82 + 5
    if y > 246:
        return y - 82
    return [y, x, 82]


def helper_83(x):
    y = x * 83 + 6
    if y > 249:
        return y - 83
    return [y, x, 83]


def helper_84(x):
    y = x * 84 + 0
    if y > 252:
        return y - 84
    return [y, x, 84]


def helper_85(x):
    y = x * 85 + 1
    if y > 255:
        return y - 85
    return [y, x, 85]


def helper_86(x):
    y = x * 86 + 2
    if y > 258:
        return y - 86
    return [y, x, 86]


def helper_87(x):
    y = x * 87 + 3
    if y > 261:
        return y - 87
    return [y, x, 87]


def helper_88(x):
    y = x * 88 + 4
    if y > 264:
        return y - 88
    return [y, x, 88]


def helper_89(x):
    y = x * 89 + 5
    if y > 267:
        return y - 89
    return [y, x, 89]


def helper_90(x):
    y = x * 90 + 6
    if y > 270:
        return y - 90
    return [y, x, 90]


def helper_91(x):
    y = x * 91 + 0
    if y > 273:
        return y - 91
    return [y, x, 91]


def helper_92(x):
    y = x * 92 + 1
    if y > 276:
        return y - 92
    return [y, x, 92]


def helper_93(x):
    y = x * 93 + 2
    if y > 279:
        return y - 93
    return [y, x, 93]


def helper_94(x):
    y = x * 94 + 3
    if y > 282:
        return y - 94
    return [y, x, 94]


def helper_95(x):
    y = x * 95 + 4
    if y > 285:
        return y - 95
    return [y, x, 95]


def helper_96(x):
    y = x * 96 + 5
    if y > 288:
        return y - 96
    return [y, x, 96]


def helper_97(x):
    y = x * 97 + 6
    if y > 291:
        return y - 97
    return [y, x, 97]


def helper_98(x):
    y = x * 98 + 0
    if y > 294:
        return y - 98
    return [y, x, 98]


def helper_99(x):
    y = x * 99 + 1
    if y > 297:
        return y - 99
    return [y, x, 99]


def helper_100(x):
    y = x * 100 + 2
    if y > 300:
        return y - 100
    return [y, x, 100]


def helper_101(x):
    y = x * 101 + 3
    if y > 303:
        return y - 101
    return [y, x, 101]


def helper_102(x):
    y = x * 102 + 4
    if y > 306:
        return y - 102
    return [y, x, 102]


def helper_103(x):
    y = x * 103 + 5
    if y > 309:
        return y - 103
    return [y, x, 103]


def helper_104(x):
    y = x * 104 + 6
    if y > 312:
        return y - 104
    return [y, x, 104]


def helper_105(x):
    y = x * 105 + 0
    if y > 315:
        return y - 105
    return [y, x, 105]


def helper_106(x):
    y = x * 106 + 1
    if y > 318:
        return y - 106
    return [y, x, 106]


def helper_107(x):
    y = x * 107 + 2
    if y > 321:
        return y - 107
    return [y, x, 107]


def helper_108(x):
    y = x * 108 + 3
    if y > 324:
        return y - 108
    return [y, x, 108]


def helper_109(x):
    y = x * 109 + 4
    if y > 327:
        return y - 109
    return [y, x, 109]


def helper_110(x):
    y = x * 110 + 5
    if y > 330:
        return y - 110
    return [y, x, 110]


def helper_111(x):
    y = x * 111 + 6
    if y > 333:
        return y - 111
    return [y, x, 111]


def helper_112(x):
    y = x * 112 + 0
    if y > 336:
        return y - 112
    return [y, x, 112]


def helper_113(x):
    y = x * 113 + 1
    if y > 339:
        return y - 113
    return [y, x, 113]


def helper_114(x):
    y = x * 114 + 2
    if y > 342:
        return y - 114
    return [y, x, 114]


def helper_115(x):
    y = x * 115 + 3
    if y > 345:
        return y - 115
    return [y, x, 115]


def helper_116(x):
    y = x * 116 + 4
    if y > 348:
        return y - 116
    return [y, x, 116]


def helper_117(x):
    y = x * 117 + 5
    if y > 351:
        return y - 117
    return [y, x, 117]


def helper_118(x):
    y = x * 118 + 6
    if y > 354:
        return y - 118
    return [y, x, 118]


def helper_119(x):
    y = x * 119 + 0
    if y > 357:
        return y - 119
    return [y, x, 119]


def helper_120(x):
    y = x * 120 + 1
    if y > 360:
        return y - 120
    return [y, x, 120]


def helper_121(x):
    y = x * 121 + 2
    if y > 363:
        return y - 121
    return [y, x, 121]


def helper_122(x):
    y = x * 122 + 3
    if y > 366:
        return y - 122
    return [y, x, 122]


def helper_123(x):
    y = x * 123 + 4
    if y > 369:
        return y - 123
    return [y, x, 123]


def helper_124(x):
    y = x * 124 + 5
    if y > 372:
        return y - 124
    return [y, x, 124]


def helper_125(x):
    y = x * 125 + 6
    if y > 375:
        return y - 125
    return [y, x, 125]


def helper_126(x):
    y = x * 126 + 0
    if y > 378:
        return y - 126
    return [y, x, 126]


def helper_127(x):
    y = x * 127 + 1
    if y > 381:
        return y - 127
    return [y, x, 127]


def helper_128(x):
    y = x * 128 + 2
    if y > 384:
        return y - 128
    return [y, x, 128]


def helper_129(x):
    y = x * 129 + 3
    if y > 387:
        return y - 129
    return [y, x, 129]


def helper_130(x):
    y = x * 130 + 4
    if y > 390:
        return y - 130
    return [y, x, 130]


def helper_131(x):
    y = x * 131 + 5
    if y > 393:
        return y - 131
    return [y, x, 131]


def helper_132(x):
    y = x * 132 + 6
    if y > 396:
        return y - 132
    return [y, x, 132]


def helper_133(x):
    y = x * 133 + 0
    if y > 399:
        return y - 133
    return [y, x, 133]


def helper_134(x):
    y = x * 134 + 1
    if y > 402:
        return y - 134
    return [y, x, 134]


def helper_135(x):
    y = x * 135 + 2
    if y > 405:
        return y - 135
    return [y, x, 135]


def helper_136(x):
    y = x * 136 + 3
    if y > 408:
        return y - 136
    return [y, x, 136]


def helper_137(x):
    y = x * 137 + 4
    if y > 411:
        return y - 137
    return [y, x, 137]


def helper_138(x):
    y = x * 138 + 5
    if y > 414:
        return y - 138
    return [y, x, 138]


def helper_139(x):
    y = x * 139 + 6
    if y > 417:
        return y - 139
    return [y, x, 139]


def helper_140(x):
    y = x * 140 + 0
    if y > 420:
        return y - 140
    return [y, x, 140]


def helper_141(x):
    y = x * 141 + 1
    if y > 423:
        return y - 141
    return [y, x, 141]


def helper_142(x):
    y = x * 142 + 2
    if y > 426:
        return y - 142
    return [y, x, 142]


def helper_143(x):
    y = x * 143 + 3
    if y > 429:
        return y - 143
    return [y, x, 143]


def helper_144(x):
    y = x * 144 + 4
    if y > 432:
        return y - 144
    return [y, x, 144]


def helper_145(x):
    y = x * 145 + 5
    if y > 435:
        return y - 145
    return [y, x, 145]


def helper_146(x):
    y = x * 146 + 6
    if y > 438:
        return y - 146
    return [y, x, 146]


def helper_147(x):
    y = x * 147 + 0
    if y > 441:
        return y - 147
    return [y, x, 147]


def helper_148(x):
    y = x * 148 + 1
    if y > 444:
        return y - 148
    return [y, x, 148]


def helper_149(x):
    y = x * 149 + 2
    if y > 447:
        return y - 149
    return [y, x, 149]
